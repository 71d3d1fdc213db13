package herald.http.server;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An access log sink writing each line at INFO to an SLF4J logger. Loaded only when chosen: slf4j-api is an
 * optional dependency of herald-http that the application provides (with the binding it logs through).
 */
public final class Slf4jSink implements AccessLog.Sink {
    private final Logger logger;

    public Slf4jSink(String name) {
        this.logger = LoggerFactory.getLogger(name);
    }

    @Override
    public void write(String line) {
        logger.info(line);
    }
}
