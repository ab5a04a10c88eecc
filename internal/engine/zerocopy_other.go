//go:build !linux

package engine

import (
	"fmt"
	"os"
)

// blockFile is an empty file for a sender's block: a temporary file,
// removed at once, which lives on as long as it is open.
func blockFile() (*os.File, error) {
	f, err := os.CreateTemp("", "tcpscope-block-*")
	if err != nil {
		return nil, fmt.Errorf("create the block's file: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("unlink the block's file: %w", err)
	}
	return f, nil
}
