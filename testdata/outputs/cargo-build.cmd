cargo build --offline --color always
