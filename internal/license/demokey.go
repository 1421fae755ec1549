//go:build demokey

package license

// The demo key exists only in binaries built with -tags demokey (make demo).
// Its private half is public, in scripts/demolicense, so that a newcomer can see
// the enterprise edition place the seed manifest without a real license. Release
// builds never carry it (TestReleaseBuildHasNoDemoKey).
func init() {
	releaseKeys[DemoKeyID] = "R/0cogSzUcse9wgMCl8zC+VJl/5R1DlXefyV6Ri9m+o="
}
