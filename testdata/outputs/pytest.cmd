python3 -m pytest -p no:cacheprovider --color=yes
