git log -p -n 3 -- man
