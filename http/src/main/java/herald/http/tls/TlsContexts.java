package herald.http.tls;

import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.JdkSslContext;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import java.io.File;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;

/** Server-side SslContexts on the JDK provider (no netty-tcnative). */
public final class TlsContexts {
    private TlsContexts() {}

    /**
     * A server context from a PEM certificate chain and a PEM PKCS#8 private key ({@code keyPassword} null when
     * the key is not encrypted). {@code trustCertFile} (PEM, may be null) holds the CAs client certificates are
     * checked against when {@code clientAuth} is not NONE; null means the JDK's default trust store.
     */
    public static SslContext fromPem(File certChain, File privateKey, String keyPassword, ClientAuth clientAuth,
                                     File trustCertFile) throws SSLException {
        SslContextBuilder b = SslContextBuilder.forServer(certChain, privateKey, keyPassword)
            .sslProvider(SslProvider.JDK)
            .clientAuth(clientAuth);
        if (trustCertFile != null) {
            b.trustManager(trustCertFile);
        }
        return b.build();
    }

    /** Wraps a JDK SSLContext for server use, without client authentication (no client certificate asked for). */
    public static SslContext fromJdk(SSLContext context) {
        return new JdkSslContext(context, false, ClientAuth.NONE);
    }
}
