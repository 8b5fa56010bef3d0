package localcluster

import (
	"fmt"
	"net"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// startEtcd runs etcd in this process, on loopback ports, with its data in dir. fsync is off: the
// data is thrown away with the cluster.
func startEtcd(dir string) (*embed.Etcd, string, error) {
	clientURL, err := freeLoopbackURL()
	if err != nil {
		return nil, "", err
	}
	peerURL, err := freeLoopbackURL()
	if err != nil {
		return nil, "", err
	}
	cfg := embed.NewConfig()
	cfg.Name = "accord-localcluster"
	cfg.Dir = dir
	cfg.UnsafeNoFsync = true
	cfg.LogLevel = "error"
	cfg.ListenClientUrls = []url.URL{*clientURL}
	cfg.AdvertiseClientUrls = []url.URL{*clientURL}
	cfg.ListenPeerUrls = []url.URL{*peerURL}
	cfg.AdvertisePeerUrls = []url.URL{*peerURL}
	cfg.InitialCluster = fmt.Sprintf("%s=%s", cfg.Name, peerURL.String())

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("starting etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, "", fmt.Errorf("etcd failed before it was ready: %w", err)
	case <-time.After(30 * time.Second):
		e.Close()
		return nil, "", fmt.Errorf("etcd was not ready within 30s")
	}
	return e, clientURL.String(), nil
}

// freeLoopbackURL picks a free port on 127.0.0.1. The port is released before etcd binds it; the
// window is tiny and a collision makes StartEtcd fail loudly rather than misbehave.
func freeLoopbackURL() (*url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("finding a free port: %w", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return nil, err
	}
	return &url.URL{Scheme: "http", Host: addr}, nil
}
