package model

// Finding is one diagnosis: what limits a transfer or is wrong with a host,
// the numbers that show it, and what to change. Rules and their thresholds
// are documented in docs/DIAGNOSES.md, one section per ID.
type Finding struct {
	// ID is stable and kebab-case ("rwnd-limited"): scripts match on it.
	ID    string `json:"id"`
	Layer Layer  `json:"layer"`
	// Severity: "critical" (costs most of the rate), "warning" (costs
	// some, or will on another path), "info" (healthy, or worth knowing).
	Severity Severity `json:"severity"`
	// Confidence: "high", "medium" or "low": how directly the evidence
	// shows it.
	Confidence Confidence `json:"confidence"`
	// Primary marks what answers "what limits this transfer": one
	// finding per direction, or several that bind together; the first
	// comes first and is the verdict.
	Primary bool `json:"primary,omitempty"`
	// Direction is the data direction the finding is about, when it is
	// about one.
	Direction Direction `json:"direction,omitempty"`
	// Summary is one plain sentence with the key number.
	Summary string `json:"summary"`
	// Explanation says why, in a few plain sentences.
	Explanation string     `json:"explanation"`
	Evidence    []Evidence `json:"evidence"`
	// Fix lists what to change, as exact commands or settings.
	Fix []Fix `json:"fix,omitempty"`
	// Effect predicts what the fix brings, in words ("lifts the window
	// bound from 12 to about 95 Mbit/s"); Predicted is that rate.
	Effect    string       `json:"effect,omitempty"`
	Predicted Opt[Bitrate] `json:"predicted_rate,omitzero"`
}

// Evidence is one number behind a finding and where it came from.
type Evidence struct {
	// What is measured, in words ("receive-window-limited time").
	What string `json:"what"`
	// Value as shown to people, with its unit ("91% of the test").
	Value string `json:"value"`
	// Source names the end and stream or interval ("server, sender,
	// stream 1"; "sysctl net.ipv4.tcp_rmem").
	Source string `json:"source,omitempty"`
}

// Fix is one change: where to make it and the exact command or setting.
type Fix struct {
	// Where: "receiver", "sender", "both ends", "path", "application".
	Where string `json:"where"`
	// Kind: "sysctl", "setsockopt", "ethtool", "tc", "ip", "tcpscope",
	// "application".
	Kind    string `json:"kind"`
	Command string `json:"command"`
}

// Layer is the layer of the seeds' method a finding belongs to, from the
// bottom up.
type Layer string

// Layers.
const (
	LayerHost        Layer = "host"
	LayerPhysical    Layer = "physical"
	LayerLink        Layer = "link"
	LayerNetwork     Layer = "network"
	LayerTransport   Layer = "transport"
	LayerApplication Layer = "application"
)

// Severity ranks findings.
type Severity string

// Severities, from the worst.
const (
	Critical Severity = "critical"
	Warning  Severity = "warning"
	Info     Severity = "info"
)

// Rank orders severities: critical 0, warning 1, info 2.
func (s Severity) Rank() int {
	switch s {
	case Critical:
		return 0
	case Warning:
		return 1
	}
	return 2
}

// Confidence says how directly the evidence shows a finding.
type Confidence string

// Confidences.
const (
	High   Confidence = "high"
	Medium Confidence = "medium"
	Low    Confidence = "low"
)
