//go:build !linux

package hostinfo

import (
	"errors"

	"github.com/tcpscope/tcpscope/internal/model"
)

// Offloads needs Linux's ethtool ioctls.
func Offloads(name string) (model.Offloads, error) {
	return model.Offloads{}, errors.New("ethtool: Linux only")
}
