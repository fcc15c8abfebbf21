node --test
