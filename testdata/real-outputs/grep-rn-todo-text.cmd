grep -rn TODO text
