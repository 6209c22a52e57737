const React = require('react');
import './styles.css';

// Widget renders a box.
export function Widget({ title }) {
  return <div className="box">{title}</div>;
}

export const Memo = React.memo(function Inner() { return null; })

class Legacy extends React.Component {
  render() {
    return <p>it's here</p>
  }
  static defaultProps = { a: 1 }
}

module.exports = { Widget, Legacy }
