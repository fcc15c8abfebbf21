apt-get install -s default-jdk-headless openjdk-17-jre-headless- 
