package lab

import "testing"

// linkDropped adds a device's receive and transmit drops from ip's JSON,
// and refuses what is not one device's statistics.
func TestLinkDropped(t *testing.T) {
	const one = `[{"ifname":"tun0","stats64":{"rx":{"bytes":10,"packets":1,"dropped":3},"tx":{"bytes":20,"packets":2,"dropped":4}}}]`
	if n, err := linkDropped(one); err != nil || n != 7 {
		t.Errorf("linkDropped = %d, %v; want 7", n, err)
	}
	for _, bad := range []string{"", "[]", `[{},{}]`, "Device does not exist"} {
		if n, err := linkDropped(bad); err == nil {
			t.Errorf("linkDropped(%q) = %d, want an error", bad, n)
		}
	}
}
