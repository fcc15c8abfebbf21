grep -rn err yaml.v3
