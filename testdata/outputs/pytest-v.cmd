python3 -m pytest -p no:cacheprovider -v --color=no
