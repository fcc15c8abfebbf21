cargo test -- --test-threads=1
