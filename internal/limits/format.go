package limits

import (
	"fmt"
	"io"
	"strings"

	"github.com/tcpscope/tcpscope/internal/model"
)

// Format writes the table as an operator checks it: the server's bounds,
// then each class in the order it is matched, with every limit it ends
// up with (inherited ones included), in lines that fit 80 columns.
func (t *Table) Format(w io.Writer) {
	if len(t.Classes) == 0 {
		fmt.Fprintf(w, "limits: %s; one class for every address\n", t.Source)
	} else {
		fmt.Fprintf(w, "limits: %s; %d classes, first match wins, then default\n", t.Source, len(t.Classes))
	}
	s := t.Server
	fmt.Fprintf(w, "server: %d tests, %d streams, %d connections not yet in a test, at once\n",
		s.MaxTests, s.MaxTotalStreams, s.MaxPending)
	for i := range t.Classes {
		t.Classes[i].format(w, s, "")
	}
	rest := "every address no class above holds"
	if len(t.Classes) == 0 {
		rest = "every address"
	}
	t.Default.format(w, s, rest)
}

// format writes a class; rest describes the addresses of a class
// without networks (the default).
func (c *Class) format(w io.Writer, s Server, rest string) {
	nets := rest
	if len(c.Networks) > 0 {
		parts := make([]string, len(c.Networks))
		for i, p := range c.Networks {
			parts[i] = p.String()
		}
		nets = strings.Join(parts, ", ")
	}
	fmt.Fprintf(w, "\nclass %s: %s\n", c.Name, nets)
	if c.Deny {
		fmt.Fprintln(w, "  deny       connections closed at once")
		return
	}
	fmt.Fprintf(w, "  tests      %d at once per address, %s\n", c.MaxTestsPerAddr, classBound(c.MaxTests, s.MaxTests))
	fmt.Fprintf(w, "  streams    %d per test, %s\n", c.MaxStreams, classBound(c.MaxTotalStreams, s.MaxTotalStreams))
	fmt.Fprintf(w, "  duration   %v per test\n", c.MaxDuration)
	fmt.Fprintf(w, "  tcp rate   %s\n", rateCap(c.MaxRate))
	fmt.Fprintf(w, "  udp rate   %s\n", rateCap(c.MaxUDPRate))
	fmt.Fprintf(w, "  protocols  %s\n", c.Protocols)
	fmt.Fprintf(w, "  pending    %d connections per address not yet in a test\n", c.MaxPendingPerAddr)
}

func classBound(class, server int) string {
	if class > 0 && class < server {
		return fmt.Sprintf("%d at once in the class", class)
	}
	return fmt.Sprintf("no class bound but the server's %d", server)
}

func rateCap(r model.Bitrate) string {
	if r == 0 {
		return "no cap"
	}
	return r.String() + " per test, all streams together"
}
