package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpmath"
)

// calcFlags are the inputs every calculation draws from; each
// subcommand marks the ones it needs.
type calcFlags struct {
	rate, target model.Bitrate
	rtt          time.Duration
	window, mss  model.Bytes
	mtu, bytes   model.Bytes
	loss, ber, c float64
	km           float64
	json         bool
}

// calcResult is one calculation: its inputs and outputs as numbers (the
// --json document) and the lines a person reads.
type calcResult struct {
	tcpmath.Calculation
	lines []string
}

func newCalcCmd(stdout io.Writer) *cobra.Command {
	f := &calcFlags{}
	cmd := &cobra.Command{
		Use:   "calc",
		Short: "TCP arithmetic: BDP, window/RTT, the Mathis bound and its inverse, BER, packet rate, fiber RTT, transfer time",
		Long: `The arithmetic of the seeds, with units done once and right: rates are SI
(1 Mbit/s = 10^6 bit/s), sizes take K/M/G as powers of 1024 and kB/MB/GB as
powers of 1000. Every subcommand takes --json.`,
		Args: noArgs("tcpscope calc bdp --rate 100M --rtt 150ms"),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	sub := func(use, short, example string, need []string, do func(*calcFlags) (*calcResult, error)) *cobra.Command {
		c := &cobra.Command{
			Use: use, Short: short, Example: example,
			Args: noArgs("tcpscope calc " + use + " --help"),
			RunE: func(cmd *cobra.Command, args []string) error {
				for _, n := range need {
					if !cmd.Flags().Changed(n) {
						return usagef(example, "calc %s needs --%s", use, n)
					}
				}
				res, err := do(f)
				if err != nil {
					return err
				}
				if f.json {
					enc := json.NewEncoder(stdout)
					enc.SetIndent("", "  ")
					return enc.Encode(res.Calculation)
				}
				_, err = io.WriteString(stdout, strings.Join(res.lines, "\n")+"\n")
				return err
			},
		}
		fl := c.Flags()
		fl.Var(rate{&f.rate}, "rate", "bit rate (SI: 100M = 10^8 bit/s)")
		fl.Var(rate{&f.target}, "target", "the rate wanted")
		fl.Var(seconds{&f.rtt}, "rtt", "round-trip time (20ms; a bare number is seconds)")
		fl.Var(size{&f.window}, "window", "window or buffer size (64K, 1MB)")
		fl.Var(size{&f.mss}, "mss", "maximum segment size (default 1460)")
		fl.Var(size{&f.mtu}, "mtu", "packet size (default 1500)")
		fl.Var(size{&f.bytes}, "bytes", "amount of data (1TB, 500G)")
		fl.Float64Var(&f.loss, "loss", 0, "packet loss probability, 0 to 1 (0.0001 = 0.01%)")
		fl.Float64Var(&f.ber, "ber", 0, "bit error rate (1e-12)")
		fl.Float64Var(&f.c, "c", tcpmath.MathisC, "the Mathis constant (1 as NDT and the Web100 paper, 0.7 with delayed ACKs)")
		fl.Float64Var(&f.km, "km", 0, "one-way fiber route length in km")
		fl.BoolVarP(&f.json, "json", "J", false, "print inputs and results as JSON")
		return c
	}
	cmd.AddCommand(
		sub("bdp", "Bandwidth-delay product and the socket buffer it needs",
			"tcpscope calc bdp --rate 100M --rtt 150ms", []string{"rate", "rtt"}, calcBDP),
		sub("window", "The most a window carries per round trip: window/RTT",
			"tcpscope calc window --window 17520 --rtt 40ms", []string{"window", "rtt"}, calcWindow),
		sub("mathis", "The Mathis bound: C·MSS/(RTT·√p)",
			"tcpscope calc mathis --rtt 20ms --loss 0.0001", []string{"rtt", "loss"}, calcMathis),
		sub("loss", "The highest loss at which one flow still reaches a target (the Mathis bound inverted)",
			"tcpscope calc loss --target 411M --rtt 20ms --c 1", []string{"target", "rtt"}, calcLoss),
		sub("ber", "The Mathis bound when loss comes from bit errors: rate ∝ √MTU",
			"tcpscope calc ber --ber 1e-10 --rtt 20ms --mtu 9000", []string{"ber", "rtt"}, calcBER),
		sub("pps", "Packets per second at a rate and packet size",
			"tcpscope calc pps --rate 1G --mtu 1500", []string{"rate"}, calcPPS),
		sub("fiber", "Round-trip time over a fiber route (light at 180,000 km/s in glass)",
			"tcpscope calc fiber --km 4000", []string{"km"}, calcFiber),
		sub("transfer", "Time to move an amount of data at a rate",
			"tcpscope calc transfer --bytes 1TB --rate 1G", []string{"bytes", "rate"}, calcTransfer),
	)
	return cmd
}

func positive(name string, v float64) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return usagef("give a positive --"+name, "--%s must be positive", name)
	}
	return nil
}

func probability(name string, v float64) error {
	if !(v > 0 && v <= 1) {
		return usagef("a probability: 0.001 is 0.1%", "--%s %g: want more than 0 and at most 1", name, v)
	}
	return nil
}

func (f *calcFlags) mssOr() model.Bytes {
	if f.mss > 0 {
		return f.mss
	}
	return 1460
}

func (f *calcFlags) mtuOr() model.Bytes {
	if f.mtu > 0 {
		return f.mtu
	}
	return 1500
}

func calcBDP(f *calcFlags) (*calcResult, error) {
	if err := errorsOf(positive("rate", float64(f.rate)), positive("rtt", float64(f.rtt))); err != nil {
		return nil, err
	}
	// Bytes hold 8 EB: a BDP beyond a quarter of that (twice it is the
	// buffer) is no path, and its arithmetic would wrap.
	if float64(f.rate)/8*f.rtt.Seconds() > math.MaxInt64/4 {
		return nil, usagef("a rate up to 1 Pbit/s and an RTT of seconds, e.g. --rate 100G --rtt 150ms", "the BDP of %s over %v is beyond any path", f.rate, f.rtt)
	}
	bdp := tcpmath.BDP(f.rate, f.rtt)
	buf := model.SockBufFor(bdp)
	lines := []string{
		fmt.Sprintf("bandwidth-delay product: %s × %v = %s (%s)", f.rate, f.rtt, bdp.Decimal(), bdp.Binary()),
		fmt.Sprintf("socket buffer for one stream: %s, twice the BDP (Linux gives half a buffer to the window)", buf.Decimal()),
	}
	if buf > math.MaxInt32 {
		// tcp_rmem and tcp_wmem are ints: the kernel refuses more.
		lines = append(lines, fmt.Sprintf("  more than Linux gives one socket (tcp_rmem and tcp_wmem stop at %d B): use %d parallel streams (-P) or more",
			math.MaxInt32, (buf+math.MaxInt32-1)/math.MaxInt32))
	} else {
		lines = append(lines,
			fmt.Sprintf("  sysctl -w net.ipv4.tcp_rmem=\"%s\"", model.LinuxRmem.WithMax(buf)),
			fmt.Sprintf("  sysctl -w net.ipv4.tcp_wmem=\"%s\"", model.LinuxWmem.WithMax(buf)))
	}
	return &calcResult{
		Calculation: tcpmath.NewCalculation("bdp",
			map[string]float64{"rate_bps": float64(f.rate), "rtt_s": f.rtt.Seconds()},
			map[string]float64{"bdp_bytes": float64(bdp), "buffer_bytes": float64(buf)}),
		lines: lines,
	}, nil
}

func calcWindow(f *calcFlags) (*calcResult, error) {
	if err := errorsOf(positive("window", float64(f.window)), positive("rtt", float64(f.rtt))); err != nil {
		return nil, err
	}
	r := tcpmath.WindowRate(f.window, f.rtt)
	return &calcResult{
		Calculation: tcpmath.NewCalculation("window",
			map[string]float64{"window_bytes": float64(f.window), "rtt_s": f.rtt.Seconds()},
			map[string]float64{"rate_bps": float64(r)}),
		lines: []string{fmt.Sprintf("window/RTT: %s (%d bytes) per %v = at most %s", f.window.Binary(), f.window, f.rtt, r)},
	}, nil
}

func calcMathis(f *calcFlags) (*calcResult, error) {
	if err := errorsOf(positive("rtt", float64(f.rtt)), probability("loss", f.loss), positive("c", f.c)); err != nil {
		return nil, err
	}
	mss := f.mssOr()
	r := tcpmath.Mathis(mss, f.rtt, f.loss, f.c)
	return &calcResult{
		Calculation: tcpmath.NewCalculation("mathis",
			map[string]float64{"mss_bytes": float64(mss), "rtt_s": f.rtt.Seconds(), "loss": f.loss, "c": f.c},
			map[string]float64{"rate_bps": float64(r)}),
		lines: []string{
			fmt.Sprintf("Mathis bound: %.3g × %d B / (%v × √%g) = %s for one loss-based flow", f.c, mss, f.rtt, f.loss, r),
			"  (N parallel flows: N × that; halving the loss gains √2 = 1.41×)",
		},
	}, nil
}

func calcLoss(f *calcFlags) (*calcResult, error) {
	if err := errorsOf(positive("target", float64(f.target)), positive("rtt", float64(f.rtt)), positive("c", f.c)); err != nil {
		return nil, err
	}
	mss := f.mssOr()
	p := tcpmath.MathisLoss(f.target, mss, f.rtt, f.c)
	return &calcResult{
		Calculation: tcpmath.NewCalculation("loss",
			map[string]float64{"target_bps": float64(f.target), "mss_bytes": float64(mss), "rtt_s": f.rtt.Seconds(), "c": f.c},
			map[string]float64{"loss": p, "packets_between_losses": 1 / p}),
		lines: []string{
			fmt.Sprintf("to reach %s over %v with a %d B MSS (C = %.3g), loss must stay below %.3g%% (%.3g): one packet in %s",
				f.target, f.rtt, mss, f.c, 100*p, p, model.GroupDigits(1/p)),
		},
	}, nil
}

func calcBER(f *calcFlags) (*calcResult, error) {
	if err := errorsOf(positive("rtt", float64(f.rtt)), probability("ber", f.ber), positive("c", f.c)); err != nil {
		return nil, err
	}
	mtu := f.mtuOr()
	r := tcpmath.BERRate(mtu, f.rtt, f.ber, f.c)
	res := &calcResult{
		Calculation: tcpmath.NewCalculation("ber",
			map[string]float64{"mtu_bytes": float64(mtu), "rtt_s": f.rtt.Seconds(), "ber": f.ber, "c": f.c},
			map[string]float64{"rate_bps": float64(r), "packet_loss": 8 * float64(mtu) * f.ber}),
		lines: []string{fmt.Sprintf("with bit errors at %g, a %d B packet is lost with probability %.3g; the bound is %s",
			f.ber, mtu, 8*float64(mtu)*f.ber, r)},
	}
	for _, m := range []model.Bytes{1500, 4470, 9000} {
		if m != mtu {
			res.lines = append(res.lines, fmt.Sprintf("  at MTU %d: %s (rate ∝ √MTU)", m, tcpmath.BERRate(m, f.rtt, f.ber, f.c)))
		}
	}
	return res, nil
}

func calcPPS(f *calcFlags) (*calcResult, error) {
	if err := positive("rate", float64(f.rate)); err != nil {
		return nil, err
	}
	size := f.mtuOr()
	pps := tcpmath.PacketsPerSecond(f.rate, size)
	return &calcResult{
		Calculation: tcpmath.NewCalculation("pps",
			map[string]float64{"rate_bps": float64(f.rate), "size_bytes": float64(size)},
			map[string]float64{"packets_per_second": pps, "ns_per_packet": 1e9 / pps}),
		lines: []string{fmt.Sprintf("%s in %d B packets: %s packets/s, one every %s",
			f.rate, size, model.GroupDigits(pps), time.Duration(1e9/pps))},
	}, nil
}

func calcFiber(f *calcFlags) (*calcResult, error) {
	if err := positive("km", f.km); err != nil {
		return nil, err
	}
	rtt := tcpmath.FiberRTT(f.km)
	return &calcResult{
		Calculation: tcpmath.NewCalculation("fiber",
			map[string]float64{"km": f.km},
			map[string]float64{"rtt_s": rtt.Seconds()}),
		lines: []string{fmt.Sprintf("%g km of fiber each way: at least %v round trip (light in glass: %g km/s); routers and detours add to it",
			f.km, rtt.Round(time.Microsecond), tcpmath.FiberSpeed)},
	}, nil
}

func calcTransfer(f *calcFlags) (*calcResult, error) {
	if err := errorsOf(positive("bytes", float64(f.bytes)), positive("rate", float64(f.rate))); err != nil {
		return nil, err
	}
	d := tcpmath.TransferTime(f.bytes, f.rate)
	return &calcResult{
		Calculation: tcpmath.NewCalculation("transfer",
			map[string]float64{"bytes": float64(f.bytes), "rate_bps": float64(f.rate)},
			map[string]float64{"seconds": d.Seconds()}),
		lines: []string{fmt.Sprintf("%s (%s) at %s: %v", f.bytes.Decimal(), f.bytes.Binary(), f.rate, d.Round(time.Millisecond))},
	}, nil
}

// errorsOf returns the first non-nil error: the first bad flag is the one
// to report.
func errorsOf(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
