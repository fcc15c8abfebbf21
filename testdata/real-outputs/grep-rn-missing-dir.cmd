grep -rn 'panic(' toml kong yaml.v3 nosuchdir
