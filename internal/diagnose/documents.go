package diagnose

import (
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// Schema versions of the JSON documents below (docs/JSON.md). As with
// model.SchemaVersion, a field that goes or changes meaning bumps the
// number; new fields do not.
const (
	ReportSchema      = "tcpscope.diagnose/1"
	HostAuditSchema   = "tcpscope.host/1"
	ExplanationSchema = "tcpscope.explain/1"
)

// Explanation is the JSON document of `tcpscope explain`: a saved run's
// diagnosis, made again from the run's data.
type Explanation struct {
	Schema string `json:"schema"` // ExplanationSchema
	// Findings are what Test finds in the run, primary first: what
	// `tcpscope test --json` puts in the run's diagnosis.
	Findings []model.Finding `json:"findings"`
	// Input names what was read when it is not a --json result:
	// "tcpscope --json-stream", or "iperf3 -J" with the program that
	// wrote it.
	Input string `json:"input,omitempty"`
	// Lacks says what that input does not carry, and which rules
	// therefore could not run, one sentence each.
	Lacks []string `json:"lacks,omitempty"`
}

// Report is the JSON document of `tcpscope diagnose`: the layered method
// end to end, from the host up.
type Report struct {
	Schema string          `json:"schema"` // ReportSchema
	Host   model.HostInfo  `json:"host"`   // this host, as the audit read it
	Path   model.PathFacts `json:"path"`   // what the handshakes learned
	// Runs are the tests, one per direction tested, each with its own
	// diagnosis; a test that broke off keeps what it measured.
	Runs []*model.Run `json:"runs"`
	// Findings are the host audit's, the path's and the tests', repeats
	// merged, ordered by layer from the host up and worst first within one.
	Findings []model.Finding `json:"findings"`
	Took     time.Duration   `json:"took_ns"` // the whole command, wall clock
	// Limits name each tested direction's verdict, in test order.
	Limits []DirectionLimit `json:"limits"`
	// Errors says why tests broke off; their runs and findings are kept
	// (a broken path's diagnosis is why it broke).
	Errors []string `json:"errors,omitempty"`
}

// DirectionLimit names what limits one direction of a test.
type DirectionLimit struct {
	Direction model.Direction          `json:"direction"`
	Goodput   model.Opt[model.Bitrate] `json:"goodput,omitzero"` // absent when not measured
	// Finding is the verdict's id; when several limits bind together,
	// Also lists the others. Empty when no finding is primary.
	Finding string   `json:"finding"`
	Also    []string `json:"also,omitempty"`
}

// Limits names the verdict of each direction of a diagnosed run, in
// summary order: the primary findings of the direction, the first of
// them its verdict.
func Limits(run *model.Run) []DirectionLimit {
	var out []DirectionLimit
	for _, s := range run.Summary {
		lim := DirectionLimit{Direction: s.Direction, Goodput: s.Goodput}
		for _, fd := range run.Diagnosis {
			switch {
			case !fd.Primary || fd.Direction != s.Direction:
			case lim.Finding == "":
				lim.Finding = fd.ID
			default:
				lim.Also = append(lim.Also, fd.ID)
			}
		}
		out = append(out, lim)
	}
	return out
}

// HostAudit is the JSON document of `tcpscope host`.
type HostAudit struct {
	Schema   string          `json:"schema"` // HostAuditSchema
	Host     model.HostInfo  `json:"host"`
	Findings []model.Finding `json:"findings"` // Host's, worst first
	// SysctlConf is the findings' sysctl fixes as a sysctl.conf snippet
	// (SysctlConf), the text --write saves.
	SysctlConf string `json:"sysctl_conf"`
}
