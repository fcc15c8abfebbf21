grep -rl Error text
