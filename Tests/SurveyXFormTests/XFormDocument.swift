/// A minimal XForm around the given primary instance children, binds and body controls, in
/// pyxform's shape, for constructs the fixtures do not have.
enum XFormDocument {
    static func make(instance: String, binds: String, body: String, model: String = "", root: String = "") -> String {
        """
        <?xml version="1.0"?>
        <h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa" xmlns:odk="http://www.opendatakit.org/xforms" xmlns:entities="http://www.opendatakit.org/xforms/entities"\(root)>
          <h:head>
            <h:title>Made</h:title>
            <model>\(model)
              <instance><data id="made">\(instance)<meta><instanceID/></meta></data></instance>
              \(binds)
              <bind nodeset="/data/meta/instanceID" type="string" readonly="true()" jr:preload="uid"/>
            </model>
          </h:head>
          <h:body>\(body)</h:body>
        </h:html>
        """
    }
}
