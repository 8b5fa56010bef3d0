package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// AdminUser is the user the cluster admin credential authenticates as; it is in system:masters.
const AdminUser = "accord-admin"

// credentials are the files a local kube-apiserver is started with, generated for each cluster:
// a serving certificate for 127.0.0.1 and localhost (with the CA that signed it), a service-account
// signing key, and a static token file holding the admin's token.
type credentials struct {
	servingCertFile, servingKeyFile string
	// caPEM verifies the serving certificate.
	caPEM                 []byte
	serviceAccountKeyFile string
	tokenFile             string
	adminToken            string
}

// newCredentials generates the credentials into dir.
func newCredentials(dir string) (*credentials, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	c := &credentials{
		servingCertFile:       filepath.Join(dir, "apiserver.crt"),
		servingKeyFile:        filepath.Join(dir, "apiserver.key"),
		serviceAccountKeyFile: filepath.Join(dir, "service-account.key"),
		tokenFile:             filepath.Join(dir, "tokens.csv"),
	}
	// The certificate (followed by the CA that signed it) and its key.
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("localhost", []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"})
	if err != nil {
		return nil, fmt.Errorf("generating the apiserver's serving certificate: %w", err)
	}
	if err := cert.WriteCert(c.servingCertFile, certPEM); err != nil {
		return nil, err
	}
	if err := keyutil.WriteKey(c.servingKeyFile, keyPEM); err != nil {
		return nil, err
	}
	c.caPEM = certPEM

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	saPEM, err := keyutil.MarshalPrivateKeyToPEM(saKey)
	if err != nil {
		return nil, err
	}
	if err := keyutil.WriteKey(c.serviceAccountKeyFile, saPEM); err != nil {
		return nil, err
	}

	token := make([]byte, 24)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	c.adminToken = hex.EncodeToString(token)
	// token,user,uid,"group1,group2"
	line := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n", c.adminToken, AdminUser, AdminUser)
	if err := os.WriteFile(c.tokenFile, []byte(line), 0o600); err != nil {
		return nil, err
	}
	return c, nil
}

// adminConfig reaches host as the admin, verifying the serving certificate.
func (c *credentials) adminConfig(host string) *rest.Config {
	return &rest.Config{
		Host:            host,
		BearerToken:     c.adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.caPEM},
	}
}
