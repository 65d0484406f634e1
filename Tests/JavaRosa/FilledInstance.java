/** An instance to send, as JavaRosa serialized it (or a deliberately broken copy), and what it is. */
final class FilledInstance {
    final String label;
    final byte[] xml;

    FilledInstance(String label, byte[] xml) {
        this.label = label;
        this.xml = xml;
    }
}
