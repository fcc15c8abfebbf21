apt-get install -s texinfo
