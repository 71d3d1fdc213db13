package herald.load.client;

import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import io.netty.handler.ssl.util.InsecureTrustManagerFactory;
import java.io.File;
import java.util.List;
import javax.net.ssl.SSLException;

/** Client TLS contexts: the JDK's TLS 1.2/1.3, trusting the JDK's CAs, a given PEM certificate, or anything. */
public final class Tls {
  private Tls() {}

  /**
   * A client context. {@code trustPem}: a PEM file of certificates to trust instead of the JDK's CAs (null:
   * the JDK's); {@code insecure}: trust any certificate and skip the host name check (testing only);
   * {@code protocols}: e.g. TLSv1.3 and TLSv1.2 (null or empty: both); {@code http2}: offer h2 by ALPN, else
   * http/1.1. The host name is checked against the certificate unless {@code insecure}.
   */
  public static SslContext client(String trustPem, boolean insecure, List<String> protocols, boolean http2)
      throws SSLException {
    SslContextBuilder b = SslContextBuilder.forClient().sslProvider(SslProvider.JDK);
    if (insecure) {
      b.trustManager(InsecureTrustManagerFactory.INSTANCE).endpointIdentificationAlgorithm(null);
    } else {
      b.endpointIdentificationAlgorithm("HTTPS");
      if (trustPem != null) b.trustManager(new File(trustPem));
    }
    b.protocols(protocols == null || protocols.isEmpty() ? List.of("TLSv1.3", "TLSv1.2") : protocols);
    b.applicationProtocolConfig(new ApplicationProtocolConfig(
        ApplicationProtocolConfig.Protocol.ALPN,
        ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
        ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT,
        http2 ? ApplicationProtocolNames.HTTP_2 : ApplicationProtocolNames.HTTP_1_1));
    return b.build();
  }

  /** The TLS protocol and cipher suite of {@code ch}'s SslHandler ("TLSv1.3 TLS_AES_128_GCM_SHA256"), or null. */
  static String sessionOf(io.netty.channel.Channel ch) {
    io.netty.handler.ssl.SslHandler h = ch == null ? null : ch.pipeline().get(io.netty.handler.ssl.SslHandler.class);
    if (h == null) return null;
    javax.net.ssl.SSLSession s = h.engine().getSession();
    return s.getProtocol() + " " + s.getCipherSuite();
  }
}
