//go:build !demokey

package license

const demoBuild = false
