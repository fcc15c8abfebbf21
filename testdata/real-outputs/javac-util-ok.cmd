javac --patch-module java.base=. -Xlint:all -d ../out java.base/java/util/[A-L]*.java
