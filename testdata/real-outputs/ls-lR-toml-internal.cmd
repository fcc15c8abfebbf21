ls -lR toml/internal
