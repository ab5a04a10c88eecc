// Package archtest holds no code, only tests that keep the architecture in
// docs/ARCHITECTURE.md true: which internal packages may import which,
// that pure packages do no I/O and read no clock, and that every package
// has a doc comment.
package archtest
