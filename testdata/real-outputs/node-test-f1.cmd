node --test test/
