python3 -m pytest --color=yes
