grep -rn 'Errorf' toml kong uniseg text/encoding nosuchdir
