grep -rn err toml
