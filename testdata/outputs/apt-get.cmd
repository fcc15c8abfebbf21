apt-get install -s libreoffice-writer
