grep -rn 'func Test' text/language text/unicode
