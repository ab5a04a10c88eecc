package diagnose

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/golden"

	"github.com/tcpscope/tcpscope/internal/model"
)

// The documents' JSON shape is pinned: each field's name and place, as
// docs/JSON.md describes them. A change here is a change for every
// consumer; a removed or renamed field bumps the schema version.
func TestDocumentShapes(t *testing.T) {
	finding := model.Finding{ID: "host-sack-off", Layer: model.LayerHost, Severity: model.Warning, Confidence: model.High,
		Summary: "s", Evidence: []model.Evidence{{What: "net.ipv4.tcp_sack", Value: "0", Source: "sysctl"}},
		Fix: []model.Fix{{Where: "this host", Kind: "sysctl", Command: "sysctl -w net.ipv4.tcp_sack=1"}}}
	host := model.HostInfo{Kernel: "6.1.0", Sysctls: map[string]string{"net.ipv4.tcp_sack": "0"}}
	for _, tc := range []struct {
		name string
		doc  any
		back any // a zero value of the document's type, to read it back into
	}{
		{"diagnose", &Report{Schema: ReportSchema, Host: host, Path: model.PathFacts{Addr: "192.0.2.7:5201", MSS: 1448, PMTU: 1500},
			Runs: []*model.Run{{Schema: model.SchemaVersion}}, Findings: []model.Finding{finding}, Took: 11 * time.Second,
			Limits: []DirectionLimit{
				{Direction: model.ClientToServer, Goodput: model.Some(94 * model.MbitPerSecond), Finding: "rwnd-limited", Also: []string{"sndbuf-limited"}},
				{Direction: model.ServerToClient, Finding: "loss-limited"}},
			Errors: []string{"the server's report is missing"}}, &Report{}},
		{"host", &HostAudit{Schema: HostAuditSchema, Host: host, Findings: []model.Finding{finding},
			SysctlConf: SysctlConf([]model.Finding{finding})}, &HostAudit{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.MarshalIndent(tc.doc, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "documents", tc.name+".golden.json")
			golden.Check(t, path, append(got, '\n'))
			if err := json.Unmarshal(got, tc.back); err != nil || !reflect.DeepEqual(tc.back, tc.doc) {
				t.Errorf("%s does not read back into its type: %v\n%+v", path, err, tc.back)
			}
		})
	}
}

// Limits names each direction's verdict and what binds with it.
func TestDirectionLimits(t *testing.T) {
	run := &model.Run{
		Summary: []model.DirectionSummary{{Direction: model.ClientToServer, Goodput: model.Some(model.MbitPerSecond)}, {Direction: model.ServerToClient}},
		Diagnosis: []model.Finding{
			{ID: "rwnd-limited", Primary: true, Direction: model.ClientToServer},
			{ID: "mss-small", Direction: model.ClientToServer},
			{ID: "sndbuf-limited", Primary: true, Direction: model.ClientToServer},
		},
	}
	want := []DirectionLimit{
		{Direction: model.ClientToServer, Goodput: model.Some(model.MbitPerSecond), Finding: "rwnd-limited", Also: []string{"sndbuf-limited"}},
		{Direction: model.ServerToClient},
	}
	if got := Limits(run); !reflect.DeepEqual(got, want) {
		t.Fatalf("Limits = %+v, want %+v", got, want)
	}
}
