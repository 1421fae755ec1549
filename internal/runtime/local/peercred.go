//go:build linux

package local

import (
	"errors"
	"fmt"
	"log"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// peerListener admits to the control socket only its owner: a peer with the
// supervisor's uid and in the supervisor's own PID, user and network
// namespaces. Rootless, a service has the supervisor's uid, so the uid alone
// proves nothing; a peer inside any environment is in other namespaces.
// Refused peers are closed and logged; Accept goes on.
type peerListener struct {
	net.Listener
	log     *log.Logger
	uidOnly bool // WeakenPeer: the test-only weakened check
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if err := l.admit(c); err != nil {
			l.log.Printf("control: refused a peer: %v", err)
			c.Close()
			continue
		}
		return c, nil
	}
}

func (l *peerListener) admit(c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return errors.New("not a Unix socket connection")
	}
	cred, err := peerCred(uc)
	if err != nil {
		return err
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("pid %d has uid %d, not %d", cred.Pid, cred.Uid, os.Getuid())
	}
	if l.uidOnly {
		return nil
	}
	return sameNamespaces(int(cred.Pid))
}

func peerCred(uc *net.UnixConn) (*unix.Ucred, error) {
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, cerr
}

// sameNamespaces checks that pid (as this process's PID namespace numbers
// it; a peer in a child namespace has its host number here) shares this
// process's PID, user and network namespaces. A peer that cannot be looked
// up is refused.
func sameNamespaces(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("peer pid %d is outside this PID namespace", pid)
	}
	for _, ns := range []string{"pid", "user", "net"} {
		mine, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			return err
		}
		theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
		if err != nil {
			return fmt.Errorf("pid %d: %w", pid, err)
		}
		if theirs != mine {
			return fmt.Errorf("pid %d is in %s, not this supervisor's %s", pid, theirs, mine)
		}
	}
	return nil
}
