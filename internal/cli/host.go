package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/hostinfo"
	"github.com/tcpscope/tcpscope/internal/report"
)

func newHostCmd(stdout io.Writer) *cobra.Command {
	var (
		o       diagnose.HostOptions
		write   string
		root    string
		asJSON  bool
		verbose bool
	)
	cmd := &cobra.Command{
		Use:   "host",
		Short: "Audit this host's TCP configuration and print the sysctl.conf that fixes it",
		Long: `Read this host's TCP sysctls, interfaces (MTU, queue length, speed,
duplex, driver, errors) and qdiscs, and say what keeps one stream from
reaching the target over the RTT: each finding with its evidence and the
command that fixes it, then a sysctl.conf snippet. tcpscope changes
nothing: --write FILE saves the snippet for you to review and apply
(sysctl -p FILE). Without --target-rate the fastest interface's speed is
the target; without --rtt, 50 ms.`,
		Example: `  tcpscope host --target-rate 1G --rtt 80ms
  tcpscope host --write /etc/sysctl.d/90-tcpscope.conf`,
		Args: noArgs("tcpscope host --target-rate 1G --rtt 80ms"),
		RunE: func(cmd *cobra.Command, args []string) error {
			r := hostinfo.Reader{Root: root}
			if root != "" {
				r.Qdiscs, r.Offloads = hostinfo.FixtureQdiscs(root), hostinfo.FixtureOffloads(root)
			}
			info, err := r.Read(cmd.Context())
			if err != nil {
				return err
			}
			findings := diagnose.Host(info, o)
			conf := diagnose.SysctlConf(findings)
			if write != "" {
				if err := os.WriteFile(write, []byte(conf), 0o644); err != nil {
					return usagef("a path you can write", "host --write: %v", err)
				}
			}
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(diagnose.HostAudit{Schema: diagnose.HostAuditSchema, Host: info, Findings: findings, SysctlConf: conf})
			}
			if err := report.WriteHostAudit(stdout, &info, findings, verbose); err != nil {
				return err
			}
			if len(findings) > 0 {
				fmt.Fprintf(stdout, "\nsysctl.conf:\n%s", conf)
				if write != "" {
					fmt.Fprintf(stdout, "written to %s; apply with: sysctl -p %s\n", write, write)
				}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.Var(rate{&o.Target}, "target-rate", "the rate one stream should reach")
	fl.Var(seconds{&o.RTT}, "rtt", fmt.Sprintf("the round trip of the path (default %v)", diagnose.AssumedRTT))
	fl.StringVar(&write, "write", "", "write the sysctl.conf snippet to FILE (nothing is applied)")
	fl.StringVar(&root, "root", "", "audit a tree recorded from another host (its proc/ and sys/) instead of this one")
	fl.BoolVarP(&asJSON, "json", "J", false, "print the host, the findings and the snippet as JSON")
	fl.BoolVarP(&verbose, "verbose", "V", false, "add each finding's explanation")
	return cmd
}
