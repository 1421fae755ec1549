package license

// DemoKeyID names the key of demo builds (see demokey.go).
const DemoKeyID = "af-demo"
