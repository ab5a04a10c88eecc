package cli

// flagOf is the command line's name for a field a hint names (see
// fault.Error): a test's settings by their JSON keys, a client's own
// by theirs. "" for one it has no flag for.
func flagOf(field string) string {
	switch field {
	case "parallel":
		return "-P"
	case "duration_ns":
		return "-t"
	case "omit_ns":
		return "-O"
	case "interval_ns":
		return "-i"
	case "bytes":
		return "-n"
	case "length":
		return "-l"
	case "window":
		return "-w"
	case "reverse":
		return "-R"
	case "bidir":
		return "--bidir"
	case "udp", "protocol":
		return "-u"
	case "congestion":
		return "-C"
	case "mss":
		return "-M"
	case "no_delay":
		return "-N"
	case "zerocopy":
		return "-Z"
	case "skip_rx_copy":
		return "--skip-rx-copy"
	case "fq_rate":
		return "--fq-rate"
	case "bitrate":
		return "-b"
	case "read_rate":
		return "--read-rate"
	case "tos":
		return "-S"
	case "client_cpu", "server_cpu":
		return "-A"
	case "udp_counters_64bit":
		return "--udp-counters-64bit"
	case "token":
		return "--token"
	case "tls":
		return "--tls or --tls-pin"
	case "tls_pin":
		return "--tls-pin"
	case "bind":
		return "--bind"
	case "connect_timeout":
		return "--connect-timeout"
	}
	return ""
}
