grep -rn '^func ' toml/internal
