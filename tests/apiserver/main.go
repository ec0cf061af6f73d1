// Command apiserver runs a real kube-apiserver (k8s.io/kubernetes, the
// release pinned in go.mod) for kapply's tests, with etcd embedded in the
// same process. Everything listens on loopback; certificates, the
// service-account key and a static admin token are generated into -dir, and
// a kubeconfig for the admin user is written to -dir/kubeconfig before the
// server starts (callers wait for /readyz themselves).
//
// Only the API server runs, plus (unless -controllers=false) the namespace
// controller, so that deleting a namespace finishes instead of staying
// Terminating. Nothing else: no Deployment status, no garbage collection of
// dependents, no service-account token or default-account creation.
package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"fmt"
	"log"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"

	_ "k8s.io/component-base/logs/json/register"
	_ "time/tzdata" // CronJob time zones, as kube-apiserver's own main
)

const token = "kapply-test-admin-token"

func main() {
	dir := flag.String("dir", "", "state directory (certificates, etcd data, kubeconfig); created if missing")
	port := flag.Int("port", 0, "secure port on 127.0.0.1 (0: pick a free one)")
	controllers := flag.Bool("controllers", true, "run the namespace controller in-process")
	verbosity := flag.Int("v", 0, "kube-apiserver log verbosity")
	flag.Parse()
	if *dir == "" {
		log.Fatal("-dir is required")
	}
	if err := run(*dir, *port, *controllers, *verbosity); err != nil {
		log.Fatal(err)
	}
}

func run(dir string, port int, controllers bool, verbosity int) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	etcdPort, err := freePort()
	if err != nil {
		return err
	}
	peerPort, err := freePort()
	if err != nil {
		return err
	}
	if port == 0 {
		if port, err = freePort(); err != nil {
			return err
		}
	}

	etcd, err := startEtcd(filepath.Join(dir, "etcd"), etcdPort, peerPort)
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	defer etcd.Close()

	certDir := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	// The same generator kube-apiserver uses for --cert-dir, run here so the
	// kubeconfig can carry the CA before the server starts; the server then
	// finds apiserver.crt/.key in --cert-dir and uses them.
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(certDir, "apiserver.crt"), certPEM, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(certDir, "apiserver.key"), keyPEM, 0o600); err != nil {
		return err
	}
	saKey := filepath.Join(dir, "sa.key")
	if err := writeRSAKey(saKey); err != nil {
		return err
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(token+",kapply-admin,kapply-admin,system:masters\n"), 0o600); err != nil {
		return err
	}
	server := "https://127.0.0.1:" + strconv.Itoa(port)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, server, certPEM); err != nil {
		return err
	}

	if controllers {
		go runControllers(kubeconfig)
	}

	cmd := app.NewAPIServerCommand()
	cmd.SetArgs([]string{
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(etcdPort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
		"--token-auth-file=" + tokens,
		"--authorization-mode=RBAC",
		"--service-account-key-file=" + saKey,
		"--service-account-signing-key-file=" + saKey,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--allow-privileged=true",
		// The kubernetes Service's endpoints cannot be a loopback address.
		"--endpoint-reconciler-type=none",
		// One process, one test run: the flow-control queues only add latency.
		"--enable-priority-and-fairness=false",
		"--v=" + strconv.Itoa(verbosity),
	})
	return cmd.Execute()
}

func startEtcd(dataDir string, clientPort, peerPort int) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Dir = dataDir
	cfg.Name = "kapply-test"
	client := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(clientPort)}
	peer := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(peerPort)}
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	// Test data: losing it on a crash is fine, fsync per write is not.
	cfg.UnsafeNoFsync = true
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("not ready after 60s")
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func writeRSAKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	der := x509.MarshalPKCS1PrivateKey(key)
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: der}), 0o600)
}

func writeKubeconfig(path, server string, ca []byte) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["real"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["real"] = &clientcmdapi.Context{Cluster: "real", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "real"
	return clientcmd.WriteToFile(*cfg, path)
}
