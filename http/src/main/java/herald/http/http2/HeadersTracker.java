package herald.http.http2;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;

/**
 * Sits in front of the frame codec and notes the stream of the last HEADERS or CONTINUATION frame the client began,
 * reading only the 9-byte frame headers (payloads are skipped by length): when a header block is so large that
 * Netty's decoder gives up on the connection, {@link GuardedCodec} still knows which request to answer 431.
 */
final class HeadersTracker extends ChannelInboundHandlerAdapter {
    private static final int PREFACE = 24;
    private static final int HEADERS = 0x1;
    private static final int CONTINUATION = 0x9;
    private long skip = PREFACE;
    private final byte[] header = new byte[9];
    private int have;
    /** The stream id of the last HEADERS or CONTINUATION frame seen; 0 before any. */
    int headersStream;

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof ByteBuf b) {
            scan(b);
        }
        ctx.fireChannelRead(msg);
    }

    private void scan(ByteBuf b) {
        int i = b.readerIndex();
        int end = b.writerIndex();
        while (i < end) {
            if (skip > 0) {
                int n = (int) Math.min(skip, end - i);
                skip -= n;
                i += n;
                continue;
            }
            header[have++] = b.getByte(i++);
            if (have == header.length) {
                have = 0;
                skip = (header[0] & 0xffL) << 16 | (header[1] & 0xff) << 8 | header[2] & 0xff;
                int type = header[3] & 0xff;
                if (type == HEADERS || type == CONTINUATION) {
                    headersStream = (header[5] & 0x7f) << 24 | (header[6] & 0xff) << 16 | (header[7] & 0xff) << 8
                        | header[8] & 0xff;
                }
            }
        }
    }
}
