package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tcpscope/tcpscope/internal/lab/emulator"
)

// pairSeq numbers the pairs of this process. Namespace names are global to
// the machine, so a process-wide counter (with the pid beside it) is what
// keeps two pairs of one test binary, or of two binaries, apart.
var pairSeq atomic.Uint32

// closeTimeout bounds teardown, which runs without the caller's context
// (that is often already cancelled when cleanup runs).
const closeTimeout = 30 * time.Second

// Check reports whether this process can build pairs: ErrPermission without
// CAP_NET_ADMIN and CAP_SYS_ADMIN (creating a named namespace mounts it),
// ErrMissingTool without ip or tc.
func Check() error {
	for _, t := range []string{"ip", "tc"} {
		if _, err := toolPath(t); err != nil {
			return err
		}
	}
	return checkCaps()
}

// checkCaps reads the effective capabilities rather than comparing the
// euid with 0: root in an unprivileged container has euid 0 and cannot
// create namespaces, and a non-root process may hold both capabilities.
func checkCaps() error {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return fmt.Errorf("lab: read capabilities: %w", err)
	}
	for line := range strings.Lines(string(status)) {
		hex, ok := strings.CutPrefix(line, "CapEff:")
		if !ok {
			continue
		}
		eff, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			return fmt.Errorf("lab: parse CapEff %q: %w", strings.TrimSpace(hex), err)
		}
		const need = 1<<unix.CAP_NET_ADMIN | 1<<unix.CAP_SYS_ADMIN
		if eff&need != need {
			return ErrPermission
		}
		return nil
	}
	return fmt.Errorf("lab: no CapEff line in /proc/self/status")
}

var toolHints = map[string]string{
	"ip":  "install iproute2",
	"tc":  "install iproute2",
	"nft": "install nftables",
}

// toolPath finds an administration tool. The sbin directories are tried
// after $PATH because a non-login root shell or a CI runner may not have
// them in $PATH.
func toolPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s is not in $PATH, /usr/sbin or /sbin (%s)", ErrMissingTool, name, toolHints[name])
}

// cmdError is a failed command: its command line, what it wrote to stderr
// and how it ended.
type cmdError struct {
	args   []string
	stderr string
	err    error
}

func (e *cmdError) Error() string {
	msg := "lab: " + strings.Join(e.args, " ")
	if e.stderr != "" {
		msg += ": " + e.stderr
	}
	return msg + ": " + e.err.Error()
}

func (e *cmdError) Unwrap() error { return e.err }

// stderrHas reports whether err is a failed command whose stderr contains s.
func stderrHas(err error, s string) bool {
	var ce *cmdError
	return errors.As(err, &ce) && strings.Contains(ce.stderr, s)
}

// run runs a tool with stdin and returns its stdout.
func run(ctx context.Context, stdin, name string, args ...string) (string, error) {
	path, err := toolPath(name)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, path, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &cmdError{
			args:   append([]string{name}, args...),
			stderr: strings.TrimSpace(stderr.String()),
			err:    err,
		}
	}
	return stdout.String(), nil
}

// nft runs nft inside namespace ns with stdin as its input.
func nft(ctx context.Context, ns, stdin string, args ...string) (string, error) {
	path, err := toolPath("nft")
	if err != nil {
		return "", err
	}
	return run(ctx, stdin, "ip", append([]string{"netns", "exec", ns, path}, args...)...)
}

// netnsFile is the bind mount that keeps a named namespace alive. iproute2
// keeps them in /run/netns; builds from before /run existed use
// /var/run/netns.
func netnsFile(name string) string {
	for _, dir := range []string{"/run/netns", "/var/run/netns"} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return filepath.Join("/run/netns", name)
}

// Link names inside the namespaces (names are per namespace, so every
// pair uses the same ones): A's end toward R, R's ends toward A and B, B's
// end toward R.
const (
	linkAR = "veth-ar"
	linkRA = "veth-ra"
	linkRB = "veth-rb"
	linkBR = "veth-br"
)

// NewPair creates hosts A and B joined through router R and applies cfg.
// If anything fails, whatever was already created is removed before
// NewPair returns. The caller must Close the pair.
func NewPair(ctx context.Context, cfg PairConfig) (_ *Pair, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := Check(); err != nil {
		return nil, err
	}
	router, backend, err := planRouter(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if router.Emulated == nil || backend == UseKernel {
		// Fail before building anything rather than halfway.
		if err := routerTools(ctx, router); err != nil {
			return nil, err
		}
	}
	p := &Pair{cfg: cfg, backend: backend}
	defer func() {
		if err != nil {
			if cerr := p.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("lab: cleaning up after the failure: %w", cerr))
			}
		}
	}()
	shape := viaRouter
	switch {
	case backend == UseKernel:
		shape = viaTUNAndRouter
	case router.Emulated != nil:
		shape = viaTUN
	}
	if err := p.build(ctx, shape); err != nil {
		return nil, err
	}
	if err := p.configureHosts(cfg.A, cfg.B); err != nil {
		return nil, err
	}
	if shape == viaTUN {
		return p, p.startEmulator(*cfg.Emulated)
	}
	if err := p.SetImpairment(ctx, AtoB, router.AtoB); err != nil {
		return nil, err
	}
	if err := p.SetImpairment(ctx, BtoA, router.BtoA); err != nil {
		return nil, err
	}
	if cfg.Middlebox != nil {
		if _, err := nft(ctx, p.R.Name, middleboxScript(*cfg.Middlebox), "-f", "-"); err != nil {
			return nil, err
		}
	}
	if shape == viaTUNAndRouter {
		return p, p.startEmulator(*router.Emulated)
	}
	return p, nil
}

// planRouter returns what the router carries (cfg's own impairments, or
// the emulated path's when netem or the kernel's tools carry it; no
// router when the emulator does) and the backend that carries an
// emulated path. With the kernel backend, the returned Emulated is what
// the emulator still carries: the delay.
func planRouter(ctx context.Context, cfg PairConfig) (PairConfig, Backend, error) {
	router := cfg
	if cfg.Emulated == nil {
		return router, Auto, nil
	}
	backend, err := chooseBackend(ctx, cfg)
	if err != nil {
		return router, backend, err
	}
	switch backend {
	case UseNetem:
		router.AtoB, router.BtoA, _ = RouterImpairments(*cfg.Emulated, cfg.MTU) // checked by chooseBackend
		router.Emulated = nil
	case UseKernel:
		var delay emulator.Config
		router.AtoB, router.BtoA, delay, _ = KernelImpairments(*cfg.Emulated, cfg.MTU) // checked by validate
		router.Emulated = &delay
	}
	return router, backend, nil
}

// routerTools checks that this host has what the router's impairments need: nft
// for loss and black holes, the netem qdisc for what only netem does.
func routerTools(ctx context.Context, router PairConfig) error {
	if router.Middlebox != nil {
		if _, err := toolPath("nft"); err != nil {
			return err
		}
	}
	for _, imp := range []Impairment{router.AtoB, router.BtoA} {
		if imp.Loss > 0 || imp.BlackHole || imp.Police != nil {
			if _, err := toolPath("nft"); err != nil {
				return err
			}
		}
		if imp.needsNetem() {
			if err := HasNetem(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// shape is how a pair's hosts are joined.
type shape int

const (
	viaRouter       shape = iota // A —veth— R —veth— B
	viaTUN                       // A —TUN— emulator —TUN— B
	viaTUNAndRouter              // A —TUN— emulator —TUN— R —veth— B (the kernel backend)
)

// build creates the pair's namespaces and joins A and B as sh says.
func (p *Pair) build(ctx context.Context, sh shape) error {
	pid := os.Getpid()
	seq, err := p.addNamespaces(ctx, pid, sh != viaTUN)
	if err != nil {
		return err
	}
	nsA, nsB, nsR := nsNames(pid, seq)
	prefixA, prefixB := linkPrefixes(pid, seq)
	p.A = &Host{Name: nsA, Link: linkAR, Addr: hostAddr(prefixA), Prefix: prefixA}
	p.B = &Host{Name: nsB, Link: linkBR, Addr: hostAddr(prefixB), Prefix: prefixB}
	switch sh {
	case viaTUN:
		p.A.Link, p.B.Link = tunA, tunB
		return p.joinByTUN(ctx)
	case viaTUNAndRouter:
		p.A.Link = tunA
		p.R = &Host{Name: nsR, Link: tunR, Addr: routerAddr(prefixA), Prefix: prefixA}
		p.rlinks = [2]string{tunR, linkRB}
		return p.joinByTUNAndRouter(ctx)
	}
	p.R = &Host{Name: nsR, Link: linkRA, Addr: routerAddr(prefixA), Prefix: prefixA}
	p.rlinks = [2]string{linkRA, linkRB}
	return p.joinByRouter(ctx)
}

// addNamespaces adds the pair's namespaces (A and B, and R withRouter)
// under a fresh sequence number, which it returns.
func (p *Pair) addNamespaces(ctx context.Context, pid int, withRouter bool) (uint32, error) {
	for attempt := 0; ; attempt++ {
		seq := pairSeq.Add(1)
		nsA, nsB, nsR := nsNames(pid, seq)
		names := []string{nsA, nsR, nsB}
		if !withRouter {
			names = []string{nsA, nsB}
		}
		var err error
		for _, ns := range names {
			if err = p.addNetns(ctx, ns); err != nil {
				break
			}
		}
		// A name can exist only if a dead process had our pid and left it
		// behind (Clean spares it because the pid is alive again): skip it.
		// What this attempt did create is in p.created and goes at Close.
		if stderrHas(err, "File exists") && attempt < 16 {
			continue
		}
		return seq, err
	}
}

// configureHosts applies each host's TCP settings and checks the
// host-wide ones it asks for.
func (p *Pair) configureHosts(a, b HostConfig) error {
	for _, hc := range []struct {
		h   *Host
		cfg HostConfig
	}{{p.A, a}, {p.B, b}} {
		list, _ := hc.cfg.sysctls() // validated by NewPair
		for _, s := range list {
			if err := hc.h.SetSysctl(s.key, s.value); err != nil {
				return err
			}
		}
		if err := hc.h.requireHostWide("net.core.rmem_max", int64(hc.cfg.RmemMax)); err != nil {
			return err
		}
		if err := hc.h.requireHostWide("net.core.wmem_max", int64(hc.cfg.WmemMax)); err != nil {
			return err
		}
	}
	return nil
}

// startEmulator runs the emulator between the hosts' TUN devices, which
// it takes over. It lives until Close, not until NewPair's context ends:
// that context bounds the building only, as it does for the router's
// commands.
func (p *Pair) startEmulator(cfg emulator.Config) error {
	e, err := emulator.Start(context.Background(), cfg, p.tuns[0], p.tuns[1])
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	p.mu.Lock()
	p.emu, p.tuns = e, nil
	p.mu.Unlock()
	return nil
}

// chooseBackend resolves cfg.Backend for an emulated path.
func chooseBackend(ctx context.Context, cfg PairConfig) (Backend, error) {
	switch cfg.Backend {
	case UseEmulator:
		return UseEmulator, nil
	case UseKernel:
		return UseKernel, nil
	case UseNetem:
		if _, _, err := RouterImpairments(*cfg.Emulated, cfg.MTU); err != nil {
			return 0, err
		}
		if err := HasNetem(ctx); err != nil {
			return 0, err
		}
		return UseNetem, nil
	}
	if _, _, err := RouterImpairments(*cfg.Emulated, cfg.MTU); err != nil {
		return UseEmulator, nil
	}
	if HasNetem(ctx) != nil {
		return UseEmulator, nil
	}
	return UseNetem, nil
}

// HasNetem reports whether the kernel has the netem qdisc, by adding one
// in a namespace of its own (loading the module if it is one); nil means
// it has. It needs root.
func HasNetem(ctx context.Context) error {
	_, _, name := nsNames(os.Getpid(), pairSeq.Add(1))
	if _, err := run(ctx, "", "ip", "netns", "add", name); err != nil {
		return err
	}
	defer delNetns(context.Background(), name)
	_, err := run(ctx, "", "tc", "-n", name, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms")
	switch {
	case err == nil:
		return nil
	case stderrHas(err, "qdisc kind is unknown"), stderrHas(err, "No such file or directory"):
		return fmt.Errorf("%w; --backend emulator (or auto) uses the userspace emulator instead", ErrNoNetem)
	}
	return fmt.Errorf("lab: probe for netem: %w", err)
}

// joinByRouter links A and B to R with veth pairs, addresses them and
// routes each host to the other's subnet through R.
func (p *Pair) joinByRouter(ctx context.Context) error {
	prefixA, prefixB := p.A.Prefix, p.B.Prefix
	for _, l := range [][2]iface{
		{{p.A.Name, linkAR, netip.PrefixFrom(p.A.Addr, prefixA.Bits())}, {p.R.Name, linkRA, netip.PrefixFrom(routerAddr(prefixA), prefixA.Bits())}},
		{{p.R.Name, linkRB, netip.PrefixFrom(routerAddr(prefixB), prefixB.Bits())}, {p.B.Name, linkBR, netip.PrefixFrom(p.B.Addr, prefixB.Bits())}},
	} {
		if err := p.addVeth(ctx, l); err != nil {
			return err
		}
	}
	if err := p.routeThroughR(ctx, []*Host{p.A, p.B}); err != nil {
		return err
	}
	return nil
}

// joinByTUNAndRouter joins A to R by TUN devices, which the emulator
// (carrying the delay) will forward between, and R to B by a veth pair;
// R forwards between them.
func (p *Pair) joinByTUNAndRouter(ctx context.Context) error {
	prefixA, prefixB := p.A.Prefix, p.B.Prefix
	for _, t := range []struct {
		h    *Host
		link string
		addr netip.Prefix
		raw  bool
	}{{p.A, tunA, netip.PrefixFrom(p.A.Addr, prefixA.Bits()), false}, {p.R, tunR, netip.PrefixFrom(routerAddr(prefixA), prefixA.Bits()), true}} {
		if err := p.addTUN(ctx, t.h, t.link, t.addr, t.raw); err != nil {
			return err
		}
	}
	if err := p.addVeth(ctx, [2]iface{{p.R.Name, linkRB, netip.PrefixFrom(routerAddr(prefixB), prefixB.Bits())}, {p.B.Name, linkBR, netip.PrefixFrom(p.B.Addr, prefixB.Bits())}}); err != nil {
		return err
	}
	// A's TUN is point to point: B's subnet lies behind it with no
	// gateway to resolve.
	args := append([]string{"-n", p.A.Name, "route", "add", prefixB.String(), "dev", tunA}, p.advmss(p.A)...)
	if _, err := run(ctx, "", "ip", args...); err != nil {
		return err
	}
	return p.routeThroughR(ctx, []*Host{p.B})
}

// iface is one end of a link: its namespace, name and address.
type iface struct {
	ns, link string
	addr     netip.Prefix
}

// addVeth creates a veth pair between two namespaces, each end created
// directly inside its namespace (so no link ever exists in the host's
// namespace, even for a moment, and none can clash with the host's
// interface names), addresses both ends and brings them up.
func (p *Pair) addVeth(ctx context.Context, l [2]iface) error {
	end := func(ns, link string) []string {
		args := []string{link, "netns", ns}
		if p.cfg.MTU != 0 {
			args = append(args, "mtu", strconv.Itoa(p.cfg.MTU))
		}
		if !p.cfg.Offload {
			// One segment per skb: the stack then segments before the
			// qdisc and the next hop sees single packets (see doc.go).
			args = append(args, "gso_max_segs", "1")
		}
		return args
	}
	args := append([]string{"link", "add"}, end(l[0].ns, l[0].link)...)
	args = append(args, "type", "veth", "peer", "name")
	args = append(args, end(l[1].ns, l[1].link)...)
	if _, err := run(ctx, "", "ip", args...); err != nil {
		return err
	}
	for _, i := range l {
		for _, args := range [][]string{
			{"-n", i.ns, "addr", "add", i.addr.String(), "dev", i.link},
			{"-n", i.ns, "link", "set", i.link, "up"},
		} {
			if _, err := run(ctx, "", "ip", args...); err != nil {
				return err
			}
		}
	}
	return nil
}

// routeThroughR brings loopback up in every namespace, makes R forward,
// and routes each of hosts to the other host's subnet through R. No
// default route: an address outside the pair stays unreachable.
func (p *Pair) routeThroughR(ctx context.Context, hosts []*Host) error {
	for _, ns := range []string{p.A.Name, p.R.Name, p.B.Name} {
		if _, err := run(ctx, "", "ip", "-n", ns, "link", "set", "lo", "up"); err != nil {
			return err
		}
	}
	if err := p.R.SetSysctl("net.ipv4.ip_forward", "1"); err != nil {
		return err
	}
	for _, h := range hosts {
		dst, via := p.B.Prefix, routerAddr(p.A.Prefix)
		if h == p.B {
			dst, via = p.A.Prefix, routerAddr(p.B.Prefix)
		}
		args := append([]string{"-n", h.Name, "route", "add", dst.String(), "via", via.String(), "dev", h.Link}, p.advmss(h)...)
		if _, err := run(ctx, "", "ip", args...); err != nil {
			return err
		}
	}
	return nil
}

// advmss is the route option that makes h advertise its configured MSS.
func (p *Pair) advmss(h *Host) []string {
	mss := p.cfg.A.MSS
	if h == p.B {
		mss = p.cfg.B.MSS
	}
	if mss <= 0 {
		return nil
	}
	return []string{"advmss", strconv.Itoa(mss)}
}

// TUN device names of an emulated pair, inside A and inside B (or, with
// the kernel backend, inside R).
const (
	tunA = "tun-a"
	tunB = "tun-b"
	tunR = "tun-r"
)

// tunMaxSegs caps the segments of one offloaded TCP or UDP aggregate the
// hosts hand a TUN device. The emulator reads each aggregate into one batch
// of buffers, as many as the device's batch size (128 for wireguard's
// TUN); an aggregate with more segments would lose its tail. 64 KiB of
// aggregate needs more than 64 segments only below an MSS of 1024.
const tunMaxSegs = 64

// joinByTUN creates a TUN device in A and in B, addresses them and routes
// each host to the other's subnet through its device. The emulator,
// started later, forwards between them.
func (p *Pair) joinByTUN(ctx context.Context) error {
	for _, h := range []*Host{p.A, p.B} {
		if err := p.addTUN(ctx, h, h.Link, netip.PrefixFrom(h.Addr, h.Prefix.Bits()), false); err != nil {
			return err
		}
		if _, err := run(ctx, "", "ip", "-n", h.Name, "link", "set", "lo", "up"); err != nil {
			return err
		}
	}
	for _, r := range []struct {
		h   *Host
		dst netip.Prefix
	}{{p.A, p.B.Prefix}, {p.B, p.A.Prefix}} {
		args := append([]string{"-n", r.h.Name, "route", "add", r.dst.String(), "dev", r.h.Link}, p.advmss(r.h)...)
		if _, err := run(ctx, "", "ip", args...); err != nil {
			return err
		}
	}
	return nil
}

// addTUN creates TUN device link in h, addressed addr, for the emulator.
// It is created inside the namespace (on a thread switched into it), so
// no link ever exists in the host's namespace; its file descriptor works
// from any thread afterwards. A raw device (the kernel backend's, in R)
// has no offloads: the emulator writes it one packet at a time, so R's
// qdiscs and nftables rules act on single packets, as a router's do on a
// wire, not on the super-packets an offloading device would be handed.
func (p *Pair) addTUN(ctx context.Context, h *Host, link string, addr netip.Prefix, raw bool) error {
	var dev emulator.Device
	err := h.Do(func() (err error) {
		if raw {
			dev, err = emulator.CreateRawTUN(link, p.cfg.mtu())
		} else {
			dev, err = emulator.CreateTUN(link, p.cfg.mtu())
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("lab: %s: %w", h.Name, err)
	}
	p.mu.Lock()
	p.tuns = append(p.tuns, dev)
	p.mu.Unlock()
	for _, args := range [][]string{
		{"-n", h.Name, "addr", "add", addr.String(), "dev", link},
		{"-n", h.Name, "link", "set", link, "gso_max_segs", strconv.Itoa(tunMaxSegs), "up"},
	} {
		if _, err := run(ctx, "", "ip", args...); err != nil {
			return err
		}
	}
	return nil
}

// addNetns creates a named namespace and records it for Close.
func (p *Pair) addNetns(ctx context.Context, name string) error {
	if _, err := run(ctx, "", "ip", "netns", "add", name); err != nil {
		return err
	}
	p.created = append(p.created, name)
	return nil
}

// SetImpairment replaces the impairment of direction d, in the router. A
// zero Impairment removes it.
func (p *Pair) SetImpairment(ctx context.Context, d Dir, imp Impairment) error {
	if !validDir(d) {
		return fmt.Errorf("lab: direction %d: want AtoB or BtoA", d)
	}
	r, err := imp.resolve(p.cfg.mtu())
	if err != nil {
		return fmt.Errorf("lab: %s: %w", d, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("lab: %s: pair is closed", d)
	}
	if p.R == nil {
		return fmt.Errorf("lab: %s: the path is emulated and has no router; its impairments are the emulator's configuration", d)
	}
	if r.needsNetem() && p.backend == UseKernel {
		return fmt.Errorf("lab: %s: the kernel backend's router has no netem: the emulator carries its delay", d)
	}
	in, out := p.RouterLinks(d)
	tc := func(args ...string) error {
		_, err := run(ctx, "", "tc", append([]string{"-n", p.R.Name}, args...)...)
		return err
	}

	netem := r.needsNetem()
	if netem && !p.netem[d] {
		if err := HasNetem(ctx); err != nil {
			return err
		}
	}
	// A change of root qdisc kind (tbf ↔ netem ↔ htb) starts from none.
	if p.shaped[d] && (netem != p.netem[d] || (r.Rate == 0 && !netem) || r.HTB != p.impairments[d].HTB) {
		if err := tc("qdisc", "del", "dev", out, "root"); err != nil {
			return err
		}
		p.shaped[d], p.netem[d] = false, false
	}
	switch {
	case netem:
		if err := tc(r.netemArgs(out)...); err != nil {
			return err
		}
		p.shaped[d], p.netem[d] = true, true
		if r.Rate > 0 {
			// The bottleneck hangs under netem, replacing the old one.
			args := r.tbfArgs(out)
			args = append(append(args[:4:4], "parent", "1:1", "handle", "10:"), args[5:]...)
			if err := tc(args...); err != nil {
				return err
			}
		} else if p.impairments[d].Rate > 0 {
			_ = tc("qdisc", "del", "dev", out, "parent", "1:1") // none there is fine
		}
	case r.Rate > 0 && r.HTB:
		for _, args := range r.htbArgs(out, p.cfg.mtu()) {
			if err := tc(args...); err != nil {
				return err
			}
		}
		p.shaped[d] = true
	case r.Rate > 0:
		if err := tc(r.tbfArgs(out)...); err != nil {
			return err
		}
		p.shaped[d] = true
	}
	p.impairments[d].Rate, p.impairments[d].Burst, p.impairments[d].Queue, p.impairments[d].HTB = r.Rate, r.Burst, r.Queue, r.HTB
	p.impairments[d].Delay, p.impairments[d].Duplicate, p.impairments[d].GE = r.Delay, r.Duplicate, r.GE

	if r.MTU > 0 || p.mtu[d] {
		if err := p.routeMTU(ctx, d, out, r.MTU); err != nil {
			return err
		}
		p.mtu[d] = r.MTU > 0
	}
	if r.BlackHole || p.holed[d] {
		if _, err := nft(ctx, p.R.Name, blackHoleScript(mtuTable(d), in, r.BlackHole), "-f", "-"); err != nil {
			return err
		}
		p.holed[d] = r.BlackHole
	}
	p.impairments[d].MTU, p.impairments[d].BlackHole = r.MTU, r.BlackHole

	if r.Loss > 0 || p.lossy[d] {
		if _, err := nft(ctx, p.R.Name, lossScript(nftTable(d), in, r.Loss), "-f", "-"); err != nil {
			return err
		}
		p.lossy[d] = r.Loss > 0
	}
	p.impairments[d].Loss = r.Loss

	if r.Police != nil || p.policed[d] {
		if _, err := nft(ctx, p.R.Name, policeScript(policeTable(d), in, r.Police), "-f", "-"); err != nil {
			return err
		}
		p.policed[d] = r.Police != nil
	}
	p.impairments[d].Police = r.Police
	return nil
}

// routeMTU sets (mtu > 0) or clears R's route MTU toward direction d's
// receiver, whose subnet lies behind out. Forwarding honours a route's MTU
// over the link's, so only this direction is limited.
func (p *Pair) routeMTU(ctx context.Context, d Dir, out string, mtu int) error {
	dst := p.B.Prefix
	if d == BtoA {
		dst = p.A.Prefix
	}
	args := []string{"-n", p.R.Name, "route", "replace", dst.Masked().String(), "dev", out,
		"proto", "kernel", "scope", "link", "src", routerAddr(dst).String()}
	if mtu > 0 {
		args = append(args, "mtu", strconv.Itoa(mtu))
	}
	_, err := run(ctx, "", "ip", args...)
	return err
}

// Dropped returns how many packets of direction d the loss rule has
// dropped since it was last set. On a pair the emulator alone carries it
// is the emulator's random and Gilbert–Elliott losses since the pair was
// built (its Counters tell the causes apart); with the kernel backend,
// the router's loss rule's.
func (p *Pair) Dropped(ctx context.Context, d Dir) (uint64, error) {
	if !validDir(d) {
		return 0, fmt.Errorf("lab: direction %d: want AtoB or BtoA", d)
	}
	p.mu.Lock()
	lossy, closed, emu := p.lossy[d], p.closed, p.emu
	p.mu.Unlock()
	if closed {
		return 0, fmt.Errorf("lab: %s: pair is closed", d)
	}
	if emu != nil && p.R == nil {
		c := emu.Counters(d)
		return c.DroppedLoss + c.DroppedGE, nil
	}
	if !lossy {
		return 0, nil
	}
	out, err := nft(ctx, p.R.Name, "", "-j", "list", "table", "netdev", nftTable(d))
	if err != nil {
		return 0, err
	}
	n, err := nftDropped(out)
	if err != nil {
		return 0, fmt.Errorf("lab: %s: %w", d, err)
	}
	return n, nil
}

// Close removes the pair's three namespaces, which removes everything in
// them: the veth ends, routes, qdiscs and nftables tables. An emulated
// pair's emulator is stopped first; closing its TUN devices removes them.
// It is safe to call more than once; calls after the first return nil.
// Processes still running inside a namespace (started with Host.Command)
// keep it alive, unnamed, until they exit.
func (p *Pair) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	var errs []error
	if p.emu != nil {
		if err := p.emu.Close(); err != nil {
			errs = append(errs, fmt.Errorf("lab: stop the emulator: %w", err))
		}
	}
	for _, dev := range p.tuns {
		if err := dev.Close(); err != nil {
			errs = append(errs, fmt.Errorf("lab: close a TUN device: %w", err))
		}
	}
	for i := len(p.created) - 1; i >= 0; i-- {
		if _, err := removeNetns(ctx, p.created[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeNetns deletes a lab namespace and ends the processes in it: what a
// `lab shell` user or a script left in the background (an iperf3 -D, say)
// would otherwise live on, cut off, in a namespace nobody can name. The
// name goes first: a process can enter a namespace only through its name
// or an open descriptor of it, so once the name is gone every process that
// will ever run in it is either inside already or holds a descriptor (an
// `ip netns exec` between opening the name and entering, which a search by
// name done first would miss). Both are ended: SIGTERM, then SIGKILL for
// what is left after a second. It reports how many processes it ended.
func removeNetns(ctx context.Context, name string) (int, error) {
	ino, known := netnsInode(name)
	err := delNetns(ctx, name)
	if !known {
		return 0, err
	}
	return endNetnsUsers(ino), err
}

// netnsInode is the inode number that names a namespace in /proc (the
// N of "net:[N]").
func netnsInode(name string) (uint64, bool) {
	var st unix.Stat_t
	if err := unix.Stat(netnsFile(name), &st); err != nil {
		return 0, false
	}
	return st.Ino, true
}

// endNetnsUsers ends every other process in the namespace of inode ino or
// holding a descriptor of it, and reports how many there were.
func endNetnsUsers(ino uint64) int {
	first := netnsUsers(ino)
	for _, pid := range first {
		_ = unix.Kill(pid, unix.SIGTERM)
	}
	left := first
	for deadline := time.Now().Add(time.Second); len(left) > 0 && time.Now().Before(deadline); left = netnsUsers(ino) {
		time.Sleep(20 * time.Millisecond)
	}
	for _, pid := range left {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	return len(first)
}

// netnsUsers lists the processes, this one aside, whose network namespace
// is the one of inode ino, or which hold a descriptor of it.
func netnsUsers(ino uint64) []int {
	want := fmt.Sprintf("net:[%d]", ino)
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if usesNetns(pid, want) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// usesNetns reports whether process pid is in the namespace whose /proc
// link reads want, or holds a descriptor of it.
func usesNetns(pid int, want string) bool {
	dir := fmt.Sprintf("/proc/%d", pid)
	if l, err := os.Readlink(dir + "/ns/net"); err == nil && l == want {
		return true
	}
	fds, err := os.ReadDir(dir + "/fd")
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if l, err := os.Readlink(dir + "/fd/" + fd.Name()); err == nil && l == want {
			return true
		}
	}
	return false
}

// delNetns deletes a named namespace; one already gone counts as deleted,
// since a concurrent Clean in another test binary may have got there first.
func delNetns(ctx context.Context, name string) error {
	_, err := run(ctx, "", "ip", "netns", "del", name)
	if err != nil {
		if _, serr := os.Stat(netnsFile(name)); errors.Is(serr, os.ErrNotExist) {
			return nil
		}
	}
	return err
}

// Clean removes the namespaces that lab processes no longer alive left
// behind, and ends the processes still running in them: a test binary
// killed by SIGKILL or by the test timeout never runs its cleanups, and a
// `lab shell` killed so leaves its shell's background jobs. Namespaces of
// live processes, this one included, are left alone, so concurrent test
// binaries may each call Clean.
func Clean(ctx context.Context) (Cleaned, error) {
	var c Cleaned
	if err := Check(); err != nil {
		return c, err
	}
	out, err := run(ctx, "", "ip", "netns", "list")
	if err != nil {
		return c, err
	}
	var errs []error
	for _, name := range parseNetnsList(out) {
		pid, ok := creatorPID(name)
		if !ok || alive(pid) {
			continue
		}
		n, err := removeNetns(ctx, name)
		c.Processes += n
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.Namespaces++
	}
	return c, errors.Join(errs...)
}

// alive reports whether a process with this pid exists. A reused pid makes
// a leftover look alive; it is then removed by the first Clean after that
// process ends.
func alive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
