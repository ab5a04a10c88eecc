package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
)

// A warning the header printed (a clamped buffer, known at setup) is not
// printed again after the summary; one that came later (the server's
// report missing) is.
func TestTextWarnsOnce(t *testing.T) {
	run := load(t, "bidir.json")
	run.Warnings = []string{"the client's receive buffer was clamped"}
	var out bytes.Buffer
	txt := NewText(&out, TextOptions{Format: model.RateAuto})
	txt.Begin(run)
	run.Warnings = append(run.Warnings, "the server's report is missing")
	if err := txt.End(run); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "clamped"); n != 1 {
		t.Errorf("the setup warning printed %d times:\n%s", n, out.String())
	}
	if n := strings.Count(out.String(), "report is missing"); n != 1 {
		t.Errorf("the later warning printed %d times", n)
	}
}

// Findings of both directions say which each is about, not only the
// primary ones: loss found server→client alone must not read as the
// upload's.
func TestLayersNameDirections(t *testing.T) {
	fs := []model.Finding{
		{ID: "lossy-path", Layer: model.LayerNetwork, Severity: model.Warning, Direction: model.ServerToClient, Summary: "s"},
		{ID: "bottleneck", Primary: true, Layer: model.LayerNetwork, Severity: model.Info, Direction: model.ClientToServer, Summary: "s"},
		{ID: "bottleneck", Primary: true, Layer: model.LayerNetwork, Severity: model.Warning, Direction: model.ServerToClient, Summary: "s"},
		{ID: "host-mtu-small", Layer: model.LayerLink, Severity: model.Info, Summary: "s"},
	}
	var out bytes.Buffer
	if err := WriteLayers(&out, fs, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"warning: lossy-path (server→client) [", "what limits this transfer (client→server): bottleneck [", "info: host-mtu-small ["} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
}
