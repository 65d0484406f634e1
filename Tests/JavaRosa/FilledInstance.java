import java.util.List;

/**
 * An instance to send, as JavaRosa serialized it (or a deliberately broken copy), what it is, and
 * the files its file questions name (sent beside it as parts, as Collect sends them).
 */
final class FilledInstance {
    final String label;
    final byte[] xml;
    final List<String> files;

    FilledInstance(String label, byte[] xml, List<String> files) {
        this.label = label;
        this.xml = xml;
        this.files = files;
    }
}
