//go:build !linux

package sockdiag

import "github.com/tcpscope/tcpscope/internal/model"

// Procs maps socket inodes to processes; without Linux it knows none.
type Procs struct{ Root string }

// Fill does nothing.
func (p *Procs) Fill(socks []model.Socket) {}
