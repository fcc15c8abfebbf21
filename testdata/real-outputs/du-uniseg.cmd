du -ah uniseg text/encoding | sort -k2
