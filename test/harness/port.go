package harness

import (
	"net"
	"testing"
)

// FreePort returns a loopback TCP port nothing listens on at the moment, for a binary's or a
// server's --secure-port and the like. (Another process may take it before the caller does; the
// tests' servers are started right after.)
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
