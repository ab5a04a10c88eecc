package profile

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/tcpscope/tcpscope/internal/lab/emulator"
	"github.com/tcpscope/tcpscope/internal/model"
)

//go:embed builtin.toml
var builtin []byte

// Path is an emulated network path between the lab's hosts A and B.
type Path struct {
	Name        string
	Description string
	Rate        model.Bitrate // A→B bottleneck; 0: none
	RateBack    model.Bitrate // B→A bottleneck (defaults to Rate); 0: none
	RTT         time.Duration
	Loss        float64        // random loss, each direction
	Queue       emulator.Queue // bottleneck queue (zero: the emulator's default)
	MTU         int            // 0: 1500

	// The rest apply to both directions, as the emulator defines them.
	Jitter     time.Duration
	JitterDist emulator.Distribution
	Reorder    float64
	Duplicate  float64
	BurstLoss  *emulator.GilbertElliott // nil: none
	BlackHole  bool                     // drop oversize packets silently (needs MTU)
	Police     *emulator.Policer        // nil: none; a token bucket that drops above its rate
}

// BDP is the path's bandwidth-delay product at its A→B rate.
func (p *Path) BDP() model.Bytes {
	return model.Bytes(float64(p.Rate) / 8 * p.RTT.Seconds())
}

// Host is a TCP tuning of a lab host.
type Host struct {
	Name        string
	Description string
	// SACK, Timestamps and WindowScaling are nil when left as the kernel
	// ships them.
	SACK, Timestamps, WindowScaling *bool
	// Rmem and Wmem are tcp_rmem/tcp_wmem (min, default, max); zero: unset.
	Rmem, Wmem [3]model.Bytes
	// MSS clamps the segment size the host advertises (0: unset).
	MSS int
	// Congestion is the host's default congestion control ("": the kernel's).
	Congestion string
	// BuffersBDP raises the rmem/wmem maxima to this multiple of a path's
	// bandwidth-delay product (0: unset). See Host.For.
	BuffersBDP float64
}

// For returns the tuning applied to a path: a BDP-relative buffer
// becomes concrete sizes, never below the kernel's usual defaults.
func (h Host) For(p *Path) Host {
	if h.BuffersBDP <= 0 {
		return h
	}
	max := max(model.Bytes(h.BuffersBDP*float64(p.BDP())), 6*model.MiB)
	h.Rmem = [3]model.Bytes{4096, 128 * model.KiB, max}
	h.Wmem = [3]model.Bytes{4096, 16 * model.KiB, max}
	return h
}

// Set is a collection of named profiles.
type Set struct {
	Paths map[string]Path
	Hosts map[string]Host
}

// Builtin returns tcpscope's own profiles. The error can only come from
// a broken build (the file is embedded and covered by tests).
func Builtin() (Set, error) {
	s, err := Parse(builtin)
	if err != nil {
		return Set{}, fmt.Errorf("built-in profiles: %w", err)
	}
	return s, nil
}

// Names lists a set's path and host names in order.
func (s Set) Names() (paths, hosts []string) {
	return slices.Sorted(maps.Keys(s.Paths)), slices.Sorted(maps.Keys(s.Hosts))
}

// Merge returns s with o's profiles added, o winning on equal names.
func (s Set) Merge(o Set) Set {
	out := Set{Paths: maps.Clone(s.Paths), Hosts: maps.Clone(s.Hosts)}
	maps.Copy(out.Paths, o.Paths)
	maps.Copy(out.Hosts, o.Hosts)
	return out
}

// Path looks a path up by name, with the known names in the error.
func (s Set) Path(name string) (Path, error) {
	p, ok := s.Paths[name]
	if !ok {
		names, _ := s.Names()
		return p, fmt.Errorf("unknown path %q (known: %s)", name, strings.Join(names, ", "))
	}
	return p, nil
}

// Host looks a host tuning up by name.
func (s Set) Host(name string) (Host, error) {
	h, ok := s.Hosts[name]
	if !ok {
		_, names := s.Names()
		return h, fmt.Errorf("unknown host tuning %q (known: %s)", name, strings.Join(names, ", "))
	}
	return h, nil
}

// file is the TOML layout.
type file struct {
	Path map[string]pathFile `toml:"path"`
	Host map[string]hostFile `toml:"host"`
}

type pathFile struct {
	Description string         `toml:"description"`
	Rate        string         `toml:"rate"`
	RateBack    string         `toml:"rate_back"`
	RTT         string         `toml:"rtt"`
	Loss        float64        `toml:"loss"`
	Queue       string         `toml:"queue"`
	MTU         int            `toml:"mtu"`
	Jitter      string         `toml:"jitter"`
	JitterDist  string         `toml:"jitter_distribution"`
	Reorder     float64        `toml:"reorder"`
	Duplicate   float64        `toml:"duplicate"`
	BurstLoss   *burstLossFile `toml:"burst_loss"`
	BlackHole   bool           `toml:"black_hole"`
	Police      string         `toml:"police"`
	PoliceBurst string         `toml:"police_burst"`
}

// burstLossFile is a Gilbert–Elliott loss model: p and r are the
// per-packet chances of entering and leaving the bad state.
type burstLossFile struct {
	P        float64 `toml:"p"`
	R        float64 `toml:"r"`
	LossBad  float64 `toml:"loss_bad"`
	LossGood float64 `toml:"loss_good"`
}

type hostFile struct {
	Description   string  `toml:"description"`
	SACK          *bool   `toml:"sack"`
	Timestamps    *bool   `toml:"timestamps"`
	WindowScaling *bool   `toml:"window_scaling"`
	Rmem          string  `toml:"rmem"`
	Wmem          string  `toml:"wmem"`
	MSS           int     `toml:"mss"`
	BuffersBDP    float64 `toml:"buffers_bdp"`
	Congestion    string  `toml:"congestion"`
}

// Parse reads profiles from TOML. Unknown keys are errors, so a misspelt
// setting is not silently ignored.
func Parse(b []byte) (Set, error) {
	var f file
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		var se *toml.StrictMissingError
		if errors.As(err, &se) {
			return Set{}, fmt.Errorf("profiles: unknown setting: %s", strings.TrimSpace(se.String()))
		}
		return Set{}, fmt.Errorf("profiles: %w", err)
	}
	s := Set{Paths: map[string]Path{}, Hosts: map[string]Host{}}
	for name, pf := range f.Path {
		p, err := pf.path(name)
		if err != nil {
			return Set{}, fmt.Errorf("profiles: path %s: %w", name, err)
		}
		s.Paths[name] = p
	}
	for name, hf := range f.Host {
		h, err := hf.host(name)
		if err != nil {
			return Set{}, fmt.Errorf("profiles: host %s: %w", name, err)
		}
		s.Hosts[name] = h
	}
	return s, nil
}

func (pf pathFile) path(name string) (Path, error) {
	p := Path{Name: name, Description: pf.Description, Loss: pf.Loss, MTU: pf.MTU}
	var err error
	if pf.Rate == "" || pf.RTT == "" {
		return p, errors.New("rate and rtt are required")
	}
	if p.Rate, err = model.ParseBitrate(pf.Rate); err != nil {
		return p, err
	}
	p.RateBack = p.Rate
	if pf.RateBack != "" {
		if p.RateBack, err = model.ParseBitrate(pf.RateBack); err != nil {
			return p, err
		}
	}
	if p.RTT, err = time.ParseDuration(pf.RTT); err != nil {
		return p, fmt.Errorf("rtt: %w", err)
	}
	if pf.Queue != "" {
		if p.Queue, err = parseQueue(pf.Queue); err != nil {
			return p, fmt.Errorf("queue: %w", err)
		}
	}
	if pf.Jitter != "" {
		if p.Jitter, err = time.ParseDuration(pf.Jitter); err != nil {
			return p, fmt.Errorf("jitter: %w", err)
		}
	}
	if pf.JitterDist != "" {
		if p.JitterDist, err = emulator.ParseDistribution(pf.JitterDist); err != nil {
			return p, err
		}
	}
	p.Reorder, p.Duplicate, p.BlackHole = pf.Reorder, pf.Duplicate, pf.BlackHole
	if b := pf.BurstLoss; b != nil {
		p.BurstLoss = &emulator.GilbertElliott{P: b.P, R: b.R, LossBad: b.LossBad, LossGood: b.LossGood}
	}
	if pf.Police != "" {
		p.Police = &emulator.Policer{}
		if p.Police.Rate, err = model.ParseBitrate(pf.Police); err != nil {
			return p, fmt.Errorf("police: %w", err)
		}
		if pf.PoliceBurst != "" {
			if p.Police.Burst, err = model.ParseBytes(pf.PoliceBurst); err != nil {
				return p, fmt.Errorf("police_burst: %w", err)
			}
		}
	} else if pf.PoliceBurst != "" {
		return p, errors.New("police_burst needs police, the policer's rate")
	}
	switch {
	case p.Rate < 0 || p.RateBack < 0:
		return p, errors.New("rates must not be negative")
	case p.RTT < 0 || p.Jitter < 0:
		return p, errors.New("rtt and jitter must not be negative")
	case p.Loss < 0 || p.Loss > 1:
		return p, fmt.Errorf("loss %v outside 0..1", p.Loss)
	case p.MTU != 0 && (p.MTU < 576 || p.MTU > 65535):
		return p, fmt.Errorf("mtu %d outside 576..65535", p.MTU)
	case p.BlackHole && p.MTU == 0:
		return p, errors.New("black_hole needs an mtu: it drops what exceeds it")
	}
	// The emulator checks the rest (probabilities, the burst model).
	if err := (emulator.Config{AtoB: p.Impairment(p.Rate)}).Validate(); err != nil {
		return p, errors.New(strings.TrimPrefix(err.Error(), "emulator: A→B: "))
	}
	return p, nil
}

// MeanLoss is the long-run share of packets lost in one direction: random
// and bursty loss together. (Bursts lose several packets per congestion
// signal, so a model by loss events, as Mathis's, reads it pessimistically.)
func (p Path) MeanLoss() float64 {
	if p.BurstLoss == nil {
		return p.Loss
	}
	return 1 - (1-p.Loss)*(1-p.BurstLoss.MeanLoss())
}

// Impairment is one direction of the path as the emulator takes it, at
// the given bottleneck rate: half the RTT, and every impairment.
func (p Path) Impairment(rate model.Bitrate) emulator.Impairment {
	d := emulator.Impairment{Delay: p.RTT / 2, Rate: rate, Queue: p.Queue, Loss: p.Loss, MTU: p.MTU,
		Jitter: p.Jitter, JitterDist: p.JitterDist, Reorder: p.Reorder, Duplicate: p.Duplicate,
		BlackHole: p.BlackHole}
	if p.BurstLoss != nil {
		ge := *p.BurstLoss
		d.GE = &ge
	}
	if p.Police != nil {
		pol := *p.Police
		d.Police = &pol
	}
	return d
}

// parseQueue reads a queue limit: a time at the bottleneck's rate
// ("100ms"), a number of packets ("64 packets", "64p") or a size
// ("256KiB", "1MB").
func parseQueue(s string) (emulator.Queue, error) {
	s = strings.TrimSpace(s)
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return emulator.Queue{}, fmt.Errorf("%q: want a positive time", s)
		}
		return emulator.Queue{Time: d}, nil
	}
	for _, suffix := range []string{"packets", "packet", "p"} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			v, err := strconv.Atoi(strings.TrimSpace(n))
			if err != nil || v <= 0 {
				return emulator.Queue{}, fmt.Errorf("%q: want a positive whole number of packets", s)
			}
			return emulator.Queue{Packets: v}, nil
		}
	}
	b, err := model.ParseBytes(s)
	if err != nil || b <= 0 {
		return emulator.Queue{}, fmt.Errorf("%q: want a time (100ms), packets (64p) or a size (256KiB)", s)
	}
	return emulator.Queue{Bytes: b}, nil
}

func (hf hostFile) host(name string) (Host, error) {
	h := Host{Name: name, Description: hf.Description, SACK: hf.SACK, Timestamps: hf.Timestamps,
		WindowScaling: hf.WindowScaling, MSS: hf.MSS, BuffersBDP: hf.BuffersBDP, Congestion: hf.Congestion}
	var err error
	if h.Rmem, err = triple(hf.Rmem); err != nil {
		return h, fmt.Errorf("rmem: %w", err)
	}
	if h.Wmem, err = triple(hf.Wmem); err != nil {
		return h, fmt.Errorf("wmem: %w", err)
	}
	switch {
	case h.MSS != 0 && (h.MSS < 88 || h.MSS > 65535):
		return h, fmt.Errorf("mss %d outside 88..65535", h.MSS)
	case h.BuffersBDP < 0:
		return h, errors.New("buffers_bdp must not be negative")
	case h.BuffersBDP > 0 && (h.Rmem[2] > 0 || h.Wmem[2] > 0):
		return h, errors.New("buffers_bdp and explicit rmem/wmem together")
	}
	return h, nil
}

// triple parses "min default max" as sysctl tcp_rmem writes it; sizes may
// carry units ("4K 64K 64K").
func triple(s string) ([3]model.Bytes, error) {
	var out [3]model.Bytes
	if s == "" {
		return out, nil
	}
	f := strings.Fields(s)
	if len(f) != 3 {
		return out, fmt.Errorf("%q: want three sizes, min default max", s)
	}
	for i, v := range f {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			out[i] = model.Bytes(n)
			continue
		}
		b, err := model.ParseBytes(v)
		if err != nil {
			return out, err
		}
		out[i] = b
	}
	if out[0] > out[1] || out[1] > out[2] {
		return out, fmt.Errorf("%q: want min ≤ default ≤ max", s)
	}
	return out, nil
}
