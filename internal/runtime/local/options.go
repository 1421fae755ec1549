package local

import "time"

// The configuration types are the same on every OS, so that code which
// builds a local runtime compiles everywhere; off Linux the runtime refuses
// (local_other.go).

// Options configure the local runtime. The zero value is the production
// configuration.
type Options struct {
	// StateBase holds one directory per environment. Default DefaultStateBase().
	StateBase string
	// Probe chooses the containment probe's targets (tests point them at
	// TEST-NET addresses in namespaces they create).
	Probe ProbeOptions
	// Isolation forces IsolationUserNS or IsolationRoot; "" picks the first
	// that works (user namespace, then root when running as root).
	Isolation string
	// Executable is the binary re-executed as supervisor, helper, shim and
	// probe; it must call MaybeRunHelper. Default os.Executable().
	Executable string
	// WorkDir is the Terraform working directory: services.<name>.dir is
	// relative to it, and no service sees it. Default: this process's.
	WorkDir string
	// ReadyTimeout bounds the wait for services. Default DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// WeakenForTest removes one boundary of the sandbox (WeakenUID,
	// WeakenView, WeakenPIDNS, WeakenPeer). Test-only: negative-control
	// tests use it to show that the probe catches a weakened sandbox. The
	// provider never sets it.
	WeakenForTest string
	// PrepareNamespace, if set, runs on the host after the namespace exists
	// and before the probe, with AF_NS_PID set to its helper's pid. It is a
	// test hook: negative-control tests give the namespace a way out with it
	// and check that the probe catches it.
	PrepareNamespace []string
}

// ProbeOptions chooses what the containment probe tries to reach. A nil list
// takes its default; an empty, non-nil list means none. Tests set every list,
// pointing the probe at TEST-NET addresses inside namespaces they create, so
// that no test packet is ever addressed to a real public host.
type ProbeOptions struct {
	// Public are literal public addresses (host:port) tried over TCP.
	Public []string
	// Resolvers are resolver IPs tried over UDP and TCP port 53. Nil: the
	// nameservers of ResolvConf plus well-known public resolvers.
	Resolvers []string
	// ResolvConf are the files resolvers are read from when Resolvers is nil.
	ResolvConf []string
	// HostAddrs are this host's addresses to try. Nil: every non-loopback,
	// non-link-local address of this host.
	HostAddrs []string
	// HostPorts are the ports tried on each host address (default 22, 80, 443).
	HostPorts []int
	// Metadata are link-local metadata endpoints (host:port).
	Metadata []string
	// UnixSockets are host Unix sockets that would be a way out (container
	// engines, the system bus). Nil: the well-known ones that exist here.
	UnixSockets []string
	// PublicName is resolved with the resolver the services get; "-" skips it.
	PublicName string
	// Timeout bounds each attempt (they run in parallel). Default 600ms.
	Timeout time.Duration
	// ControlProxy replaces the environment's own gateway address in the
	// positive control (tests use it to make the gateway unreachable).
	ControlProxy string
}
