// Package cli is tcpscope's command line: one file per subcommand, each
// parsing its own flags into a config, running the engine, choosing the
// presenter, and mapping failures to documented exit codes with a one-line
// "try:" hint. It is the only package that wires the others together.
package cli
