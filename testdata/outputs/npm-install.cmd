npm install --loglevel=http --nodedir=/usr request@2.88.2 glob@7.2.3 rimraf@3.0.2 ./vendor/fastcrc
