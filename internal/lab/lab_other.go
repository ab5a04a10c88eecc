//go:build !linux

package lab

import "context"

// Check reports ErrNotSupported: the lab needs Linux network namespaces.
func Check() error { return ErrNotSupported }

// NewPair reports ErrNotSupported.
func NewPair(ctx context.Context, cfg PairConfig) (*Pair, error) { return nil, ErrNotSupported }

// Clean reports ErrNotSupported.
func Clean(ctx context.Context) (Cleaned, error) { return Cleaned{}, ErrNotSupported }

// SetImpairment reports ErrNotSupported.
func (p *Pair) SetImpairment(ctx context.Context, d Dir, imp Impairment) error {
	return ErrNotSupported
}

// Dropped reports ErrNotSupported.
func (p *Pair) Dropped(ctx context.Context, d Dir) (uint64, error) { return 0, ErrNotSupported }

// Close has nothing to remove.
func (p *Pair) Close() error { return nil }

// HasNetem reports ErrNotSupported: the lab needs Linux.
func HasNetem(ctx context.Context) error { return ErrNotSupported }
