du -a text | sort -k2
