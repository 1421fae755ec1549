package local

import "github.com/antifailure/terraform-provider-antifailure/internal/refusal"

// Codes of the local runtime's sandbox. They are registered on every OS so
// that the error reference lists them wherever it is generated.
var (
	NotLinux = refusal.Register("AF-RUN-080", "The local runtime runs only on Linux: its sandbox is made of Linux namespaces, so it cannot contain an environment on this OS.", "Run Terraform on Linux for runtime.provider local, or use runtime.provider kubernetes from here.")
	NoImages = refusal.Register("AF-RUN-082", "images was set for a local environment: the local runtime runs each service's command from its dir and never pulls or runs an image, so the override would be silently ignored.", "Remove images from this environment, or place it on a container runtime (runtime.provider kubernetes).")
	BadDir   = refusal.Register("AF-RUN-081", "A service's application directory (its dir in the manifest) cannot be given to it.", "Point dir at the directory holding the application's files only: it must exist, and must not be, or contain, the Terraform working directory or the local runtime's state.")
)
