cargo build --color always
